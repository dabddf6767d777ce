#include "runtime/spec/config_python.h"

#include <sys/stat.h>

#include <set>
#include <sstream>

namespace corral::runtime::config_schema {
namespace {

// Module names as Python spells them: identifiers joined by dots.
bool IsModuleName(const std::string& name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  bool start = true;
  for (char c : name) {
    if (c == '.') {
      if (start) return false;
      start = true;
      continue;
    }
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(c >= '0' && c <= '9' && !start)) return false;
    start = false;
  }
  return true;
}

Rule<PythonScanSpec> ScanModeKey() {
  return {"mode", [](const YAML::Node& n, const Where& w, Reader& r, PythonScanSpec& t) {
            std::string v;
            if (!r.String(n, w, &v)) return;
            if (std::optional<ScanMode> mode = ParseMode<ScanMode>(v)) {
              t.mode = *mode;
            } else {
              r.Report(w, "expected " + AllowedModes<ScanMode>() + ", got " + Quote(v));
            }
          }};
}

// A list of module names (deny_modules, allowlist); each bad one reported at its index.
template <typename T>
Rule<T> ModuleListKey(const char* key, std::vector<std::string> T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            std::vector<std::string> names;
            if (n.IsNull() || !r.StringList(n, w, &names)) return;
            bool ok = true;
            for (size_t i = 0; i < names.size(); ++i) {
              if (!IsModuleName(names[i])) {
                r.Report({w.path + "[" + std::to_string(i) + "]", w.line},
                         "expected a module name like json or os.path, got " + Quote(names[i]));
                ok = false;
              }
            }
            if (ok) t.*field = std::move(names);
          }};
}

Rule<PythonScanSpec> DenyPathsKey() {
  return {"deny_paths", [](const YAML::Node& n, const Where& w, Reader& r, PythonScanSpec& t) {
            std::vector<std::string> paths;
            if (n.IsNull() || !r.StringList(n, w, &paths)) return;
            bool ok = true;
            for (size_t i = 0; i < paths.size(); ++i) {
              if (paths[i].empty() || paths[i].front() != '/') {
                r.Report({w.path + "[" + std::to_string(i) + "]", w.line},
                         "must be an absolute path, got " + Quote(paths[i]));
                ok = false;
              }
            }
            if (ok) t.deny_paths = std::move(paths);
          }};
}

const Table<PythonScanSpec>& ScanTable() {
  static const Table<PythonScanSpec> table = {
      ScanModeKey(),
      StringListKey("deny_calls", &PythonScanSpec::deny_calls),
      ModuleListKey("deny_modules", &PythonScanSpec::deny_modules),
      DenyPathsKey(),
      BoolKey("deny_environ", &PythonScanSpec::deny_environ),
  };
  return table;
}

Rule<PythonSpec> InterpreterKey() {
  return {"interpreter", [](const YAML::Node& n, const Where& w, Reader& r, PythonSpec& t) {
            std::string v;
            if (!r.String(n, w, &v)) return;
            if (v.empty() || v.front() != '/') {
              r.Report(w, "must be an absolute path inside the jail, got " + Quote(v));
              return;
            }
            t.interpreter = v;
          }};
}

Rule<PythonSpec> CommandsKey() {
  return {"commands", [](const YAML::Node& n, const Where& w, Reader& r, PythonSpec& t) {
            std::vector<std::string> entries;
            if (n.IsNull() || !r.StringList(n, w, &entries)) return;
            std::vector<std::pair<std::string, std::string>> resolved;
            std::set<std::string> names;
            bool ok = true;
            for (size_t i = 0; i < entries.size(); ++i) {
              const YAML::Mark mark = n[i].Mark();
              const Where at{w.path + "[" + std::to_string(i) + "]",
                             mark.line >= 0 ? mark.line + 1 : w.line};
              auto command = ResolvePythonCommand(entries[i]);
              if (!command) {
                r.Report(at, command.error().message());
                ok = false;
              } else if (!names.insert(command->first).second) {
                r.Report(at, "a second command named " + Quote(command->first));
                ok = false;
              } else {
                resolved.push_back(std::move(*command));
              }
            }
            if (ok) t.commands = std::move(resolved);
          }};
}

const Table<PythonSpec>& PythonTable() {
  static const Table<PythonSpec> table = {
      InterpreterKey(),
      SectionKey("scan", &PythonSpec::scan, ScanTable()),
      ModuleListKey("allowlist", &PythonSpec::allowlist),
      CommandsKey(),
      SizeKey("command_output_limit", &PythonSpec::command_output_limit_bytes),
  };
  return table;
}

// The design's `version: "3"` (or "3.11"): the interpreter /usr/bin/python<version>. Only
// Python 3: the scanner and the import guard the runner loads are Python 3 code.
Rule<PythonSpec> VersionKey() {
  return {"version", [](const YAML::Node& n, const Where& w, Reader& r, PythonSpec& t) {
            std::string v;
            if (!r.String(n, w, &v)) return;
            bool ok = v == "3" || (v.size() > 2 && v.rfind("3.", 0) == 0);
            for (size_t i = 2; ok && i < v.size(); ++i) ok = v[i] >= '0' && v[i] <= '9';
            if (!ok) {
              r.Report(w, "expected 3 or 3.N (corral runs Python 3), got " + Describe(n));
              return;
            }
            t.interpreter = "/usr/bin/python" + v;
          }};
}

const Table<PythonSpec>& DesignPythonTable() {
  static const Table<PythonSpec> table = [] {
    Table<PythonSpec> t = {VersionKey()};
    for (const Rule<PythonSpec>& rule : PythonTable()) t.push_back(rule);
    return t;
  }();
  return table;
}

Status CheckExecutable(const std::string& path, const std::string& entry) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Error(ErrorCode::kNotFound, Quote(entry) + ": " + path + " does not exist");
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
    return Error(ErrorCode::kInvalidArgument,
                 Quote(entry) + ": " + path + " is not an executable file");
  }
  return {};
}

}  // namespace

Result<std::pair<std::string, std::string>> ResolvePythonCommand(const std::string& entry) {
  if (entry.empty()) return Error(ErrorCode::kInvalidArgument, "expected a command, got \"\"");
  if (entry.find('/') != std::string::npos) {
    if (entry.front() != '/') {
      return Error(ErrorCode::kInvalidArgument,
                   Quote(entry) + ": a path must be absolute (or give a bare name)");
    }
    RETURN_IF_ERROR(CheckExecutable(entry, entry));
    return std::make_pair(entry.substr(entry.rfind('/') + 1), entry);
  }
  std::istringstream dirs(kCommandSearchPath);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string path = dir + "/" + entry;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      RETURN_IF_ERROR(CheckExecutable(path, entry));
      return std::make_pair(entry, path);
    }
  }
  return Error(ErrorCode::kNotFound,
               Quote(entry) + ": not found in " + std::string(kCommandSearchPath));
}

Rule<JailSpec> PythonSectionKey() { return SectionKey("python", &JailSpec::python, PythonTable()); }

Rule<JailSpec> DesignPythonSectionKey() {
  return {"python",
          [](const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
            if (n.IsMap() && n["version"] && n["interpreter"]) {
              r.Report(w,
                       "give version or interpreter, not both (version 3.N is the "
                       "interpreter /usr/bin/python3.N)");
            }
            ApplyTable(DesignPythonTable(), n, w, r, spec.python);
          },
          Suffixed(DesignPythonTable(), ".")};
}

}  // namespace corral::runtime::config_schema
