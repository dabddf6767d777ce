#include "runtime/spec/config_design.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/spec/config.h"
#include "runtime/spec/config_network.h"
#include "runtime/spec/config_python.h"
#include "runtime/spec/provider_config.h"

namespace corral::runtime::config_schema {
namespace {

// The design's keys directly under `sandbox:` that DeerFlow's section never has.
constexpr const char* kDesignOnlyKeys[] = {"mode",       "timeout", "limits",
                                           "filesystem", "python",  "env"};

// The design's defaults (its own numbers, not corral's).
constexpr int64_t kDesignMemoryMiB = 256;
constexpr int64_t kDesignCpuSeconds = 10;
constexpr int64_t kDesignMaxProcesses = 16;
constexpr double kDesignTimeoutSeconds = 30;

// Every design key that has a corral counterpart in the same file, design path (under
// `sandbox.`) first. A file may write each setting once.
constexpr struct {
  const char* design;
  const char* corral;
} kOverlaps[] = {
    {"mode", "mode"},
    {"timeout", "limits.timeout"},
    {"limits.memory_mb", "limits.memory"},
    {"limits.cpu_seconds", "limits.cpu_time"},
    {"limits.max_processes", "limits.pids"},
    {"filesystem.root", "user_data_dir"},
    {"filesystem.mounts", "mounts"},
    {"network", "network"},
    {"python", "python"},
    {"env", "env"},
};

// A whole number > 0 and <= max, written plainly (not quoted, no unit).
bool PositiveInteger(const YAML::Node& n, const Where& w, Reader& r, int64_t max, int64_t* out) {
  const std::string s = n.IsScalar() && !IsQuoted(n) ? n.Scalar() : "";
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  const bool integer = !s.empty() && end == s.data() + s.size() &&
                       (ec == std::errc() || ec == std::errc::result_out_of_range);
  if (!integer || (ec == std::errc() && v < 1)) {
    r.Report(w, "must be a positive integer, got " + Describe(n));
    return false;
  }
  if (ec == std::errc::result_out_of_range || v > max) {
    r.Report(w, "must be at most " + std::to_string(max) + " (got " + s + ")");
    return false;
  }
  *out = v;
  return true;
}

template <typename T>
Rule<T> PositiveIntegerKey(const char* key, int64_t max, void (*set)(T&, int64_t)) {
  return {key, [max, set](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            int64_t v;
            if (PositiveInteger(n, w, r, max, &v)) set(t, v);
          }};
}

const Table<LimitsSpec>& LimitsTable() {
  static const Table<LimitsSpec> table = {
      PositiveIntegerKey<LimitsSpec>("memory_mb", std::numeric_limits<int64_t>::max() / kMiB,
                                     [](LimitsSpec& l, int64_t v) { l.memory_bytes = v * kMiB; }),
      PositiveIntegerKey<LimitsSpec>("cpu_seconds", std::numeric_limits<int64_t>::max(),
                                     [](LimitsSpec& l, int64_t v) { l.cpu_time_seconds = v; }),
      PositiveIntegerKey<LimitsSpec>("max_processes", std::numeric_limits<int64_t>::max(),
                                     [](LimitsSpec& l, int64_t v) { l.pids = v; }),
  };
  return table;
}

Rule<JailSpec> TimeoutKey() {
  return {"timeout", [](const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
            const std::string s = n.IsScalar() && !IsQuoted(n) ? n.Scalar() : "";
            double v = 0;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) ||
                v <= 0) {
              r.Report(w, "must be a positive number of seconds, got " + Describe(n));
              return;
            }
            spec.limits.timeout_seconds = v;
          }};
}

const Table<MountSpec>& MountTable() {
  static const Table<MountSpec> table = {
      StringKey("host", &MountSpec::host_path, /*required=*/true),
      StringKey("guest", &MountSpec::container_path, /*required=*/true),
      BoolKey("readonly", &MountSpec::read_only),
  };
  return table;
}

// `root` is the sandbox's own directory: what corral calls user_data_dir, bound read-write
// at /mnt/user-data and the code's working directory's parent. Not corral's rootfs (a
// whole OS tree as /): an empty work directory there would leave no python3 to run.
const Table<JailSpec>& FilesystemTable() {
  static const Table<JailSpec> table = {
      OptionalStringKey("root", &JailSpec::user_data_dir),
      ListKey("mounts", &JailSpec::mounts, MountTable()),
  };
  return table;
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// env: {NAME: value}; names are checked here so that a bad one is named sandbox.env.NAME.
Rule<JailSpec> EnvKey() {
  return {"env",
          [](const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
            if (n.IsNull()) return;
            auto entries = ReadNamedStrings(n, w, r, "value",
                                            [](const YAML::Node& v, const Where& at, Reader& rd,
                                               std::vector<std::string>* out) {
                                              out->resize(1);
                                              return rd.String(v, at, &(*out)[0]);
                                            });
            if (!entries) return;
            bool ok = true;
            for (const auto& [name, value] : *entries) {
              if (!IsEnvName(name)) {
                r.Report({w.path + "." + name, w.line},
                         "a variable name must match [A-Za-z_][A-Za-z0-9_]*");
                ok = false;
              }
            }
            if (ok) spec.env = std::move(*entries);
          },
          {".*"}};
}

const Table<JailSpec>& DesignTable() {
  static const Table<JailSpec> table = {
      RuntimeModeKey(),
      TimeoutKey(),
      SectionKey("limits", &JailSpec::limits, LimitsTable()),
      SectionKey("filesystem", FilesystemTable()),
      NetworkSectionKey(),
      DesignPythonSectionKey(),
      EnvKey(),
  };
  return table;
}

// The design key that made `sandbox` design-shaped, for messages.
std::string ShapeKey(const YAML::Node& sandbox) {
  for (const char* key : kDesignOnlyKeys) {
    if (sandbox[key]) return key;
  }
  return "network";
}

void ApplyDesign(const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
  const size_t before = r.problems().size();
  ApplyTable(DesignTable(), n, w, r, spec);
  bool unknown = false;
  for (const auto& entry : n) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    unknown = unknown || std::none_of(DesignTable().begin(), DesignTable().end(),
                                      [&](const Rule<JailSpec>& rule) { return rule.key == key; });
  }
  if (unknown && r.problems().size() > before) {
    r.Report(w, "read in the process-sandbox design's shape (it has " + ShapeKey(n) +
                    "), which does not take DeerFlow's sandbox: keys; put those in a file "
                    "of their own");
  }
}

// The node at `dotted` below `map` ("limits.memory"), and where its key sits; nullopt if
// any part is missing.
std::optional<std::pair<YAML::Node, Where>> Locate(const YAML::Node& map, const std::string& dotted,
                                                   Where where) {
  YAML::Node node = map;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot - start);
    if (!node.IsMap()) return std::nullopt;
    std::optional<std::pair<YAML::Node, Where>> found;
    for (const auto& entry : node) {
      if (entry.first.IsScalar() && entry.first.Scalar() == key) {
        found = std::make_pair(entry.second, Child(where, key, entry.first));
      }
    }
    if (!found) return std::nullopt;
    if (dot == std::string::npos) return found;
    node.reset(found->first);  // rebinds; `node = ...` would overwrite the document's node
    where = found->second;
    start = dot + 1;
  }
}

// Validate()'s mount rules, reworded to the design's key names and lines.
void CheckDesignMounts(const YAML::Node& mounts, const Where& at, Reader& r,
                       const std::vector<MountSpec>& spec_mounts) {
  for (std::string line : ValidateMounts(spec_mounts)) {
    // "mounts[I].FIELD: what"; "container_path of mounts[J]" inside `what`.
    const size_t close = line.find(']');
    const size_t colon = line.find(": ");
    if (line.rfind("mounts[", 0) != 0 || close == std::string::npos || colon == std::string::npos) {
      r.Report(at, line);
      continue;
    }
    const std::string index = line.substr(7, close - 7);
    const std::string field = line.substr(close + 2, colon - close - 2);
    std::string what = line.substr(colon + 2);
    for (size_t p; (p = what.find("container_path of mounts[")) != std::string::npos;) {
      what.replace(p, std::strlen("container_path of mounts["), "guest of " + at.path + "[");
    }
    const std::string design_field = field == "host_path" ? "host" : "guest";
    const size_t i = std::stoul(index);
    int line_no = at.line;
    if (mounts.IsSequence() && i < mounts.size()) {
      const YAML::Mark mark = mounts[i].Mark();
      if (mark.line >= 0) line_no = mark.line + 1;
    }
    r.Report({at.path + "[" + index + "]." + design_field, line_no}, what);
  }
}

// The sandbox's own temp root: made when the sandbox starts if it is missing (mkdir -p,
// runtime/run/planner.h PrepareHostDirs), so only something in the way is refused here.
void CheckRoot(const Where& at, Reader& r, const std::string& root) {
  struct stat st;
  if (root.empty() || root[0] != '/') {
    r.Report(at, "must be an absolute host path (got " + Quote(root) + ")");
    return;
  }
  std::string existing = root;
  while (::stat(existing.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR) &&
         existing.size() > 1) {
    existing = existing.substr(0, std::max<size_t>(existing.rfind('/'), 1));
  }
  if (::stat(existing.c_str(), &st) != 0) {
    r.Report(at,
             std::string(std::strerror(errno)) + ": " + existing + " (got " + Quote(root) + ")");
  } else if (!S_ISDIR(st.st_mode)) {
    r.Report(at, existing == root
                     ? "must be a directory (got " + Quote(root) + ")"
                     : existing + " is not a directory, so " + Quote(root) + " cannot be made");
  } else if (existing != root) {
    r.Note(at, root + " does not exist yet: it is made when the sandbox starts");
  }
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

// python.version names an interpreter; without a rootfs the jail's /usr is the host's. A
// 3.N the host lacks is met by the nearest newer 3.M it has (Python 3 keeps what a minor
// gave, deprecations aside), with a note; refused only when none is there.
void CheckInterpreter(const Where& at, Reader& r, JailSpec& spec) {
  if (spec.rootfs) return;
  std::string& path = spec.python.interpreter;
  if (IsExecutableFile(path)) return;
  constexpr std::string_view kPrefix = "/usr/bin/python3.";
  int minor = 0;
  const char* digits = path.c_str() + std::min(path.size(), kPrefix.size());
  const auto [end, ec] = std::from_chars(digits, path.c_str() + path.size(), minor);
  // Minors up to 3.99 (a longer number names no Python there is).
  if (path.rfind(kPrefix, 0) == 0 && ec == std::errc() && *end == '\0' && minor < 100) {
    for (int newer = minor + 1; newer < 100; ++newer) {
      const std::string candidate = std::string(kPrefix) + std::to_string(newer);
      if (!IsExecutableFile(candidate)) continue;
      r.Note(at, "3." + std::to_string(minor) + " is not on this host; using " + candidate +
                     " (the nearest newer Python 3 minor)");
      path = candidate;
      return;
    }
  }
  r.Report(at, path +
                   " is not an executable on this host, nor any newer Python 3 minor (the "
                   "jail's /usr is the host's)");
}

}  // namespace

Rule<JailSpec> RuntimeModeKey() {
  return {"mode", [](const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
            std::string v;
            if (!r.String(n, w, &v)) return;
            if (std::optional<RunMode> mode = ParseMode<RunMode>(v)) {
              spec.mode = *mode;
            } else {
              r.Report(w, "expected " + AllowedModes<RunMode>() + ", got " + Describe(n));
            }
          }};
}

bool IsDesignSandbox(const YAML::Node& sandbox) {
  if (!sandbox || !sandbox.IsMap()) return false;
  for (const char* key : kDesignOnlyKeys) {
    if (sandbox[key]) return true;
  }
  const YAML::Node network = sandbox["network"];
  return network && network.IsMap() && (network["enabled"] || network["allow_domains"]);
}

void ApplyDesignDefaults(JailSpec& spec) {
  spec.limits.memory_bytes = kDesignMemoryMiB * kMiB;
  spec.limits.cpu_time_seconds = kDesignCpuSeconds;
  spec.limits.pids = kDesignMaxProcesses;
  spec.limits.timeout_seconds = kDesignTimeoutSeconds;
  spec.network.mode = NetworkMode::kNone;
  spec.namespaces.net = true;
}

Rule<JailSpec> SandboxSectionKey() {
  std::vector<std::string> children;
  for (const std::string& path : KeyPaths(DesignTable())) children.push_back("." + path);
  return {"sandbox",
          [](const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
            if (IsDesignSandbox(n)) return ApplyDesign(n, w, r, spec);
            // DeerFlow's: configures the tool layer, which reads it itself; checked here so
            // that a typo is not silently ignored.
            ProviderConfig scratch;
            if (Status st = LoadProviderConfig(n, YAML::Node(), &scratch); !st) {
              r.Report(w, st.error().message());
            }
          },
          children};
}

void FinishDesignSandbox(const YAML::Node& doc, Reader& r, JailSpec& spec) {
  const Where sandbox_at = Locate(doc, "sandbox", Where{})->second;
  const YAML::Node sandbox = doc["sandbox"];
  for (const auto& overlap : kOverlaps) {
    auto design = Locate(sandbox, overlap.design, sandbox_at);
    auto corral = Locate(doc, overlap.corral, Where{});
    if (!design || !corral) continue;
    r.Report(corral->second, "also set by " + design->second.path +
                                 " (the process-sandbox design's shape); write it in one place");
  }
  // The host is looked at only for a file that is otherwise right: a mount missing its
  // guest was reported once already, not again as an empty path.
  if (!r.problems().empty()) return;
  if (auto root = Locate(sandbox, "filesystem.root", sandbox_at); root && spec.user_data_dir) {
    CheckRoot(root->second, r, *spec.user_data_dir);
  }
  if (auto mounts = Locate(sandbox, "filesystem.mounts", sandbox_at);
      mounts && mounts->first.IsSequence()) {
    CheckDesignMounts(mounts->first, mounts->second, r, spec.mounts);
  }
  if (auto version = Locate(sandbox, "python.version", sandbox_at)) {
    CheckInterpreter(version->second, r, spec);
  }
  // The network mode and namespaces.net agree as in corral's form, with the design's
  // network: section (or corral's, or neither: the design's default, none) deciding.
  if (auto network = Locate(sandbox, "network", sandbox_at)) {
    ReconcileHostNetwork(doc, network->first, network->second, r, spec);
  } else {
    ReconcileHostNetwork(doc, r, spec);
  }
}

}  // namespace corral::runtime::config_schema
