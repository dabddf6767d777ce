#include "tools/tools.h"

#include <algorithm>
#include <functional>
#include <map>

#include "tools/audit_log.h"
#include "tools/file_locks.h"
#include "tools/providers/sandbox_search.h"
#include "tools/text.h"

namespace corral::tools {
namespace {

using runtime::SandboxErrc;
using runtime::SandboxError;
using json = nlohmann::json;

// Reads typed arguments; the first problem becomes the tool's error text.
class Args {
 public:
  explicit Args(const json& j) : j_(j.is_object() ? j : json::object()) {}

  std::string Str(const std::string& key, bool required = true) {
    if (!j_.contains(key) || j_[key].is_null()) {
      if (required) Fail("missing required parameter '" + key + "'");
      return "";
    }
    if (!j_[key].is_string()) Fail("parameter '" + key + "' must be a string");
    return j_[key].is_string() ? j_[key].get<std::string>() : "";
  }
  std::optional<std::string> OptStr(const std::string& key) {
    if (!j_.contains(key) || j_[key].is_null()) return std::nullopt;
    return Str(key);
  }
  std::optional<int> OptInt(const std::string& key) {
    if (!j_.contains(key) || j_[key].is_null()) return std::nullopt;
    if (!j_[key].is_number_integer()) {
      Fail("parameter '" + key + "' must be an integer");
      return std::nullopt;
    }
    return j_[key].get<int>();
  }
  bool Bool(const std::string& key, bool fallback) {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    if (!j_[key].is_boolean()) Fail("parameter '" + key + "' must be a boolean");
    return j_[key].is_boolean() ? j_[key].get<bool>() : fallback;
  }
  const std::optional<std::string>& error() const { return error_; }

 private:
  void Fail(const std::string& e) {
    if (!error_) error_ = e;
  }
  json j_;
  std::optional<std::string> error_;
};

ToolOutput Err(const std::string& text) { return {"Error: " + text, false, {}, {}}; }
ToolOutput Ok(const std::string& text) { return {text, true, {}, {}}; }

// Policy refusals (traversal, outside the allowed paths, escaping symlinks) explain
// themselves; DeerFlow shows them as "Error: <message>".
std::optional<ToolOutput> PolicyError(const SandboxError& e) {
  if (e.code == SandboxErrc::kPathEscape) return Err(e.message);
  return std::nullopt;
}

ToolOutput Bash(runtime::Sandbox& sb, Args& a, const ToolSettings& s) {
  std::string command = a.Str("command");
  if (a.error()) return Err(*a.error());
  // DeerFlow runs every command from the workspace; the local provider rewrites the
  // virtual path to the host's.
  auto r =
      sb.ExecuteCommand("cd /mnt/user-data/workspace; " + command, s.env, s.bash_command_timeout);
  if (!r) return Err(r.error().message);
  std::string text = runtime::RedactSecrets(r->text, s.secrets);
  ToolOutput out = Ok(MiddleTruncate(text, s.bash_output_max_chars));
  out.exit_code = r->exit_code;
  out.limit = r->limit;
  if (!out.limit && s.bash_output_max_chars > 0 &&
      CharCount(text) > static_cast<size_t>(s.bash_output_max_chars)) {
    out.limit = "bash_output_max_chars";
  }
  return out;
}

ToolOutput Ls(runtime::Sandbox& sb, Args& a, const ToolSettings& s) {
  std::string path = a.Str("path");
  if (a.error()) return Err(*a.error());
  auto r = sb.ListDir(path, 2);
  if (!r) {
    if (auto p = PolicyError(r.error())) return *p;
    switch (r.error().code) {
      case SandboxErrc::kNotFound:
      case SandboxErrc::kNotDirectory:
        return Err("Directory not found: " + path);
      case SandboxErrc::kPermissionDenied:
        return Err("Permission denied: " + path);
      default:
        return Err("Unexpected error listing directory: " + r.error().message);
    }
  }
  if (r->empty()) return Ok("(empty)");
  std::string text;
  for (const auto& p : *r) text += (text.empty() ? "" : "\n") + p;
  return Ok(HeadTruncate(text, s.ls_output_max_chars, kLsHint));
}

ToolOutput ReadFile(runtime::Sandbox& sb, Args& a, const ToolSettings& s) {
  std::string path = a.Str("path");
  std::optional<int> start = a.OptInt("start_line"), end = a.OptInt("end_line");
  if (a.error()) return Err(*a.error());
  if (start && *start < 1) return Ok("(start_line must be >= 1)");
  if (end && *end < 1) return Ok("(end_line must be >= 1)");
  if (start && end && *start > *end) return Ok("(start_line > end_line — no lines in range)");
  auto r = sb.ReadFile(path, start, end);
  if (!r) {
    if (auto p = PolicyError(r.error())) return *p;
    switch (r.error().code) {
      case SandboxErrc::kNotFound:
        return Err("File not found: " + path);
      case SandboxErrc::kPermissionDenied:
        return Err("Permission denied reading file: " + path);
      case SandboxErrc::kIsDirectory:
        return Err("Path is a directory, not a file: " + path);
      case SandboxErrc::kBinary:
        return Err("cannot read '" + path +
                   "' as text — it appears to be a binary file. Use bash (e.g. `file`, `xxd`) "
                   "to inspect it.");
      default:
        return Err("Unexpected error reading file: " + r.error().message);
    }
  }
  if (r->empty()) return Ok(start ? "(start_line exceeds file length)" : "(empty)");
  return Ok(HeadTruncate(*r, s.read_file_output_max_chars, kReadFileHint));
}

ToolOutput WriteError(const std::string& path, const SandboxError& e) {
  if (auto p = PolicyError(e)) return *p;
  switch (e.code) {
    case SandboxErrc::kPermissionDenied:
      return Err("Permission denied writing to file: " + path);
    case SandboxErrc::kIsDirectory:
      return Err("Path is a directory, not a file: " + path);
    case SandboxErrc::kReadOnly:
      return Err(MiddleTruncate(
          "Failed to write file '" + path + "': OSError: [Errno 30] Read-only file system", 2000));
    default:
      return Err(
          MiddleTruncate("Failed to write file '" + path + "': OSError: " + e.message, 2000));
  }
}

ToolOutput WriteFile(runtime::Sandbox& sb, Args& a, const ToolSettings& s) {
  std::string path = a.Str("path"), content = a.Str("content");
  bool append = a.Bool("append", false);
  if (a.error()) return Err(*a.error());
  if (!append && s.write_file_max_bytes > 0 &&
      static_cast<int64_t>(content.size()) > s.write_file_max_bytes) {
    ToolOutput out = Err("write_file content (" + std::to_string(content.size()) +
                         " bytes) exceeds the " + std::to_string(s.write_file_max_bytes) +
                         "-byte single-call limit. Write the file in smaller pieces: the first "
                         "with write_file, the rest with append=true.");
    out.limit = "write_file_max_bytes";
    return out;
  }
  auto lock = LockFile(sb.id(), path);
  auto r = sb.WriteFile(path, content, append);
  if (!r) return WriteError(path, r.error());
  return Ok("OK");
}

std::string ReplaceText(std::string content, const std::string& from, const std::string& to,
                        bool all) {
  size_t pos = 0;
  while ((pos = content.find(from, pos)) != std::string::npos) {
    content.replace(pos, from.size(), to);
    pos += to.size();
    if (!all) break;
  }
  return content;
}

ToolOutput StrReplace(runtime::Sandbox& sb, Args& a, const ToolSettings&) {
  std::string path = a.Str("path"), old_str = a.Str("old_str"), new_str = a.Str("new_str");
  bool all = a.Bool("replace_all", false);
  if (a.error()) return Err(*a.error());
  auto lock = LockFile(sb.id(), path);
  auto content = sb.ReadFile(path, std::nullopt, std::nullopt);
  if (!content) {
    if (auto p = PolicyError(content.error())) return *p;
    switch (content.error().code) {
      case SandboxErrc::kNotFound:
        return Err("File not found: " + path);
      case SandboxErrc::kPermissionDenied:
        return Err("Permission denied accessing file: " + path);
      default:
        return Err("Unexpected error replacing string: " + content.error().message);
    }
  }
  if (old_str.empty()) return Ok("OK");
  if (content->find(old_str) == std::string::npos) {
    return Err("String to replace not found in file: " + path);
  }
  auto w = sb.WriteFile(path, ReplaceText(*content, old_str, new_str, all), false);
  if (!w) {
    if (auto p = PolicyError(w.error())) return *p;
    if (w.error().code == SandboxErrc::kPermissionDenied ||
        w.error().code == SandboxErrc::kReadOnly) {
      return Err("Permission denied accessing file: " + path);
    }
    return Err("Unexpected error replacing string: " + w.error().message);
  }
  return Ok("OK");
}

// DeerFlow's effective cap: min(requested, configured), each clamped to 1..hard_max,
// non-positive meaning the default.
int EffectiveCap(std::optional<int> requested, int configured, int fallback, int hard_max) {
  auto clamp = [&](int v) { return v <= 0 ? fallback : std::min(v, hard_max); };
  return std::min(clamp(requested.value_or(fallback)), clamp(configured));
}

ToolOutput SearchError(const std::string& path, const SandboxError& e, const std::string& what) {
  if (auto p = PolicyError(e)) return *p;
  switch (e.code) {
    case SandboxErrc::kNotFound:
      return Err("Directory not found: " + path);
    case SandboxErrc::kNotDirectory:
      return Err("Path is not a directory: " + path);
    case SandboxErrc::kPermissionDenied:
      return Err("Permission denied: " + path);
    case SandboxErrc::kInvalidRegex:
      return Err("Invalid regex pattern: " + e.message);
    default:
      return Err("Unexpected error " + what + ": " + e.message);
  }
}

ToolOutput Glob(runtime::Sandbox& sb, Args& a, const ToolSettings& s) {
  std::string pattern = a.Str("pattern"), path = a.Str("path");
  bool include_dirs = a.Bool("include_dirs", false);
  std::optional<int> max = a.OptInt("max_results");
  if (a.error()) return Err(*a.error());
  int cap = EffectiveCap(max, s.glob_max_results, 200, runtime::kGlobMaxResults);
  auto r = sb.Glob(path, pattern, include_dirs, cap);
  if (!r) return SearchError(path, r.error(), "searching paths");
  if (r->matches.empty()) return Ok("No files matched under " + path);
  std::string text = "Found " + std::to_string(r->matches.size()) + " paths under " + path;
  if (r->truncated) text += " (showing first " + std::to_string(r->matches.size()) + ")";
  for (size_t i = 0; i < r->matches.size(); ++i) {
    text += "\n" + std::to_string(i + 1) + ". " + r->matches[i];
  }
  if (r->truncated)
    text += "\n\nResults truncated. Narrow the path or pattern to see fewer matches.";
  ToolOutput out = Ok(text);
  if (r->truncated) out.limit = "glob_max_results";
  return out;
}

// The trailer of a grep that a per-call work bound ended early: which bound, its value,
// and that the rest of the tree was not searched.
std::string GrepStoppedNotice(const std::string& limit, const runtime::GrepOptions& o) {
  std::string bound = limit == "grep_max_bytes_scanned"
                          ? std::to_string(o.max_bytes_scanned) + " bytes read per call"
                          : runtime::SecondsText(o.max_seconds) + " per call";
  return "\n\nSearch stopped early: the " + limit + " limit (" + bound +
         ") was reached; files not yet searched were skipped, so matches may be missing. "
         "Narrow the path or add a glob filter.";
}

ToolOutput Grep(runtime::Sandbox& sb, Args& a, const ToolSettings& s) {
  std::string pattern = a.Str("pattern"), path = a.Str("path");
  runtime::GrepOptions o;
  o.glob = a.OptStr("glob");
  o.literal = a.Bool("literal", false);
  o.case_sensitive = a.Bool("case_sensitive", false);
  std::optional<int> max = a.OptInt("max_results");
  if (a.error()) return Err(*a.error());
  auto m = runtime::LineMatcher::Create(pattern, o.literal, o.case_sensitive);
  if (!m) return Err("Invalid regex pattern: " + m.error().message);
  o.max_results = EffectiveCap(max, s.grep_max_results, 100, runtime::kGrepMaxResults);
  o.max_bytes_scanned = s.grep_max_bytes_scanned;
  o.max_seconds = s.grep_max_seconds;
  auto r = sb.Grep(path, pattern, o);
  if (!r) return SearchError(path, r.error(), "searching file contents");
  std::string text;
  if (r->matches.empty()) {
    text = "No matches found under " + path;
  } else {
    text = "Found " + std::to_string(r->matches.size()) + " matches under " + path;
    if (r->truncated) text += " (showing first " + std::to_string(r->matches.size()) + ")";
  }
  for (const auto& hit : r->matches) {
    text += "\n" + hit.path + ":" + std::to_string(hit.line_number) + ": " + hit.line;
  }
  if (r->truncated) text += "\n\nResults truncated. Narrow the path or add a glob filter.";
  if (r->stopped_by) text += GrepStoppedNotice(*r->stopped_by, o);
  ToolOutput out = Ok(runtime::RedactSecrets(text, s.secrets));
  if (r->truncated) out.limit = "grep_max_results";
  if (r->stopped_by && !out.limit) out.limit = r->stopped_by;
  return out;
}

// The first string parameter holding a NUL byte that may not: paths, commands and glob
// patterns reach the kernel, the shell or fnmatch() as C strings, cut at the NUL, so the
// file validated would not be the file used. File content, str_replace's strings and the
// grep pattern (RE2 takes its length) are data and may hold NULs.
std::optional<std::string> NulParameter(const std::string& tool, const json& args) {
  if (!args.is_object()) return std::nullopt;
  for (const auto& [key, value] : args.items()) {
    if (key == "content" || key == "old_str" || key == "new_str") continue;
    if (tool == "grep" && key == "pattern") continue;
    if (value.is_string() && value.get_ref<const std::string&>().find('\0') != std::string::npos) {
      return key;
    }
  }
  return std::nullopt;
}

using ToolFn = std::function<ToolOutput(runtime::Sandbox&, Args&, const ToolSettings&)>;

const std::map<std::string, ToolFn>& Table() {
  static const auto* table = new std::map<std::string, ToolFn>{{"bash", Bash},
                                                               {"ls", Ls},
                                                               {"read_file", ReadFile},
                                                               {"write_file", WriteFile},
                                                               {"str_replace", StrReplace},
                                                               {"glob", Glob},
                                                               {"grep", Grep}};
  return *table;
}

}  // namespace

ToolSettings SettingsFrom(const runtime::ProviderConfig& c) {
  ToolSettings s;
  s.bash_output_max_chars = c.bash_output_max_chars;
  s.read_file_output_max_chars = c.read_file_output_max_chars;
  s.ls_output_max_chars = c.ls_output_max_chars;
  s.bash_command_timeout = c.bash_command_timeout;
  s.env = c.environment;
  s.secrets = runtime::SecretValues(c);
  return s;
}

const std::vector<std::string>& ToolNames() {
  static const std::vector<std::string> names = {"bash",        "ls",   "read_file", "write_file",
                                                 "str_replace", "glob", "grep"};
  return names;
}

ToolOutput RunTool(runtime::Sandbox& sandbox, const std::string& name, const nlohmann::json& args,
                   const ToolSettings& settings) {
  auto it = Table().find(name);
  if (it == Table().end()) return Err("unknown tool '" + name + "'");
  if (!args.is_object() && !args.is_null()) return Err("tool arguments must be a JSON object");
  if (auto key = NulParameter(name, args)) {
    return Err("parameter '" + *key + "' must not contain a NUL byte");
  }
  Args a(args);
  return it->second(sandbox, a, settings);
}

}  // namespace corral::tools
