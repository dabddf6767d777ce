#include "tools/providers/aio_sandbox.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/json_input.h"
#include "tools/providers/http_client.h"
#include "tools/providers/sandbox_search.h"

namespace corral::runtime {

namespace {

using nlohmann::json;

// Where DeerFlow's commands start (its bash tool sends `cd /mnt/user-data/workspace; ...`).
constexpr const char* kWorkspace = "/mnt/user-data/workspace";

SandboxErrc CodeOfErrorType(const std::string& type) {
  if (type == "not_found") return SandboxErrc::kNotFound;
  if (type == "permission_denied") return SandboxErrc::kPermissionDenied;
  if (type == "invalid_path") return SandboxErrc::kPathEscape;
  if (type == "read_only_filesystem") return SandboxErrc::kReadOnly;
  if (type == "decode_error") return SandboxErrc::kBinary;
  if (type == "invalid_target") return SandboxErrc::kInvalidArgument;
  return SandboxErrc::kIo;
}

// The error an AIO answer describes: FileOperationError in `data` (HTTP 200,
// success:false), FastAPI's {"detail": ...} for 4xx, or just the status.
SandboxError ErrorOfReply(const HttpReply& reply, const json& body, const std::string& path) {
  if (body.is_object() && body.contains("data") && body["data"].is_object() &&
      body["data"].contains("error_type")) {
    const json& e = body["data"];
    std::string message = e.value("message", body.value("message", "failed"));
    return SandboxError{CodeOfErrorType(e.value("error_type", "io_error")), message,
                        e.value("errno", 0)};
  }
  std::string message;
  if (body.is_object() && body.contains("message") && body["message"].is_string()) {
    message = body["message"].get<std::string>();
  } else if (body.is_object() && body.contains("detail")) {
    message =
        body["detail"].is_string() ? body["detail"].get<std::string>() : body["detail"].dump();
  }
  if (message.empty()) message = "sandbox server answered HTTP " + std::to_string(reply.status);
  SandboxErrc code = reply.status == 404                          ? SandboxErrc::kNotFound
                     : reply.status == 422 || reply.status == 400 ? SandboxErrc::kInvalidArgument
                                                                  : SandboxErrc::kIo;
  if (!path.empty() && message.find(path) == std::string::npos) message = path + ": " + message;
  return SandboxError{code, message};
}

SandboxError Unreachable(const Error& e) {
  return SandboxError{SandboxErrc::kUnavailable, "sandbox server unreachable: " + e.message()};
}

// Depth of `entry` below `root` (1 = a child), or 0 when it is not below it.
int DepthBelow(const std::string& root, const std::string& entry) {
  std::string prefix = root == "/" ? "/" : root + "/";
  if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) return 0;
  std::string rel = entry.substr(prefix.size());
  if (!rel.empty() && rel.back() == '/') rel.pop_back();
  return 1 + static_cast<int>(std::count(rel.begin(), rel.end(), '/'));
}

bool HasIgnoredPart(const std::string& root, const std::string& entry) {
  std::string rel = entry.substr(std::min(entry.size(), root.size()));
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    if (end > start && IsIgnoredName(rel.substr(start, end - start))) return true;
    start = end + 1;
  }
  return false;
}

std::string Trimmed(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

AioSandbox::AioSandbox(std::string id, std::string base_url)
    : Sandbox(std::move(id)), base_url_(Trimmed(std::move(base_url))) {}

SbResult<json> AioSandbox::Call(const std::string& route, const json& body, const std::string& path,
                                double timeout_seconds) {
  HttpCall call;
  call.method = "POST";
  call.url = base_url_ + "/v1/" + route;
  call.headers = {{"Content-Type", "application/json"}};
  call.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  call.timeout_seconds = timeout_seconds;
  auto reply = Perform(call);
  if (!reply) return Unreachable(reply.error());
  json parsed = ParseJsonInputOrDiscarded(reply->body);
  if (reply->status == 200 && parsed.is_object() && parsed.value("success", true)) {
    return parsed.contains("data") ? parsed["data"] : json();
  }
  return ErrorOfReply(*reply, parsed, path);
}

SbResult<CommandResult> AioSandbox::DoExecuteCommand(const std::string& command, const EnvList& env,
                                                     std::optional<double> timeout) {
  const double seconds = timeout.value_or(kDefaultCommandTimeoutSeconds);
  if (!has_bash_api_) {
    if (!env.empty()) {
      return SandboxError{SandboxErrc::kUnavailable,
                          "the sandbox server has no /v1/bash API, which per-call env needs"};
    }
    return ExecThroughShell(command, seconds);
  }
  json env_json = json::object();
  for (const auto& [k, v] : env) env_json[k] = v;
  const auto started = std::chrono::steady_clock::now();
  auto data = Call("bash/exec",
                   {{"command", command},
                    {"exec_dir", kWorkspace},
                    {"env", env_json},
                    {"hard_timeout", seconds}},
                   "", seconds + 30);
  if (!data && data.error().code == SandboxErrc::kNotFound) {
    has_bash_api_ = false;  // an older AIO image: only /v1/shell
    return DoExecuteCommand(command, env, timeout);
  }
  if (!data) return data.error();
  CommandResult r;
  r.exit_code =
      data->value("exit_code", json()).is_number_integer() ? (*data)["exit_code"].get<int>() : -1;
  std::string status = data->value("status", "completed");
  r.timed_out = status == "timed_out";
  if (r.timed_out) r.limit = "wall_time";
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  r.text = FormatCommandText(data->value("stdout", ""), data->value("stderr", ""), r.exit_code,
                             r.timed_out ? std::optional<double>(seconds) : std::nullopt);
  return r;
}

SbResult<CommandResult> AioSandbox::ExecThroughShell(const std::string& command, double seconds) {
  const auto started = std::chrono::steady_clock::now();
  auto data = Call("shell/exec",
                   {{"command", std::string("cd ") + kWorkspace + "; " + command},
                    {"no_change_timeout", seconds},
                    {"hard_timeout", seconds}},
                   "", seconds + 30);
  if (!data) return data.error();
  CommandResult r;
  std::string status = data->value("status", "completed");
  r.timed_out = status == "hard_timeout" || status == "no_change_timeout";
  if (r.timed_out) r.limit = "wall_time";
  const json& code = data->contains("exit_code") ? (*data)["exit_code"] : json();
  r.exit_code = code.is_number_integer() ? code.get<int>() : (r.timed_out ? 124 : 0);
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  r.text = FormatCommandText(data->value("output", ""), "", r.exit_code,
                             r.timed_out ? std::optional<double>(seconds) : std::nullopt);
  return r;
}

SbResult<std::string> AioSandbox::DoReadFile(const std::string& path, std::optional<int> start_line,
                                             std::optional<int> end_line) {
  json body = {{"file", path}};
  // The API's lines are 0-based, end exclusive; ours are 1-based, both ends inclusive.
  if (start_line) body["start_line"] = std::max(0, *start_line - 1);
  if (end_line) body["end_line"] = *end_line;
  auto data = Call("file/read", body, path);
  if (!data) return data.error();
  return data->value("content", "");
}

SbResult<std::string> AioSandbox::DoDownloadFile(const std::string& path) {
  HttpCall call;
  call.url = base_url_ + "/v1/file/download?path=" + UrlEscape(path);
  call.timeout_seconds = 300;
  call.max_reply_bytes = kDownloadMaxBytes;
  auto reply = Perform(call);
  if (!reply) {
    if (reply.error().message().find("reply larger") != std::string::npos) {
      return SandboxError{SandboxErrc::kTooLarge, path + ": larger than 100 MiB"};
    }
    return Unreachable(reply.error());
  }
  if (reply->status == 200) return std::move(reply->body);
  return ErrorOfReply(*reply, ParseJsonInputOrDiscarded(reply->body), path);
}

SbResult<std::vector<std::string>> AioSandbox::DoListDir(const std::string& path, int max_depth) {
  const std::string root = Trimmed(path);
  auto data = Call("file/list",
                   {{"path", root}, {"recursive", max_depth > 1}, {"show_hidden", true}}, path);
  if (!data) return data.error();
  std::vector<std::string> out;
  if (!data->contains("files") || !(*data)["files"].is_array()) return out;
  for (const json& f : (*data)["files"]) {
    if (!f.is_object()) continue;
    std::string entry = Trimmed(f.value("path", ""));
    int depth = DepthBelow(root, entry);
    if (depth == 0 || depth > max_depth || HasIgnoredPart(root, entry)) continue;
    out.push_back(f.value("is_directory", false) ? entry + "/" : entry);
  }
  std::sort(out.begin(), out.end());
  return out;
}

SbStatus AioSandbox::DoWriteFile(const std::string& path, const std::string& content, bool append) {
  auto data = Call("file/write", {{"file", path}, {"content", content}, {"append", append}}, path);
  if (!data) return data.error();
  return {};
}

SbStatus AioSandbox::DoUpdateFile(const std::string& path, const std::string& bytes) {
  auto data =
      Call("file/write", {{"file", path}, {"content", Base64Encode(bytes)}, {"encoding", "base64"}},
           path, 300);
  if (!data) return data.error();
  return {};
}

SbResult<GlobResult> AioSandbox::DoGlob(const std::string& path, const std::string& pattern,
                                        bool include_dirs, int max_results) {
  const std::string root = Trimmed(path);
  std::vector<std::string> found;
  if (include_dirs) {  // find returns files only; the listing has both
    auto data =
        Call("file/list", {{"path", root}, {"recursive", true}, {"show_hidden", true}}, path);
    if (!data) return data.error();
    for (const json& f : data->value("files", json::array())) {
      std::string entry = f.is_object() ? Trimmed(f.value("path", "")) : "";
      if (DepthBelow(root, entry) == 0) continue;
      std::string rel = entry.substr(root == "/" ? 1 : root.size() + 1);
      if (GlobMatches(pattern, rel)) found.push_back(entry);
    }
  } else {
    auto data = Call("file/find", {{"path", root}, {"glob", pattern}}, path);
    if (!data) return data.error();
    for (const json& f : data->value("files", json::array())) {
      if (f.is_string()) found.push_back(f.get<std::string>());
    }
  }
  GlobResult result;
  std::sort(found.begin(), found.end());
  for (const std::string& entry : found) {
    if (HasIgnoredPart(root, entry)) continue;
    if (static_cast<int>(result.matches.size()) >= max_results) {
      result.truncated = true;
      break;
    }
    result.matches.push_back(entry);
  }
  return result;
}

SbResult<GrepResult> AioSandbox::DoGrep(const std::string& path, const std::string& pattern,
                                        const GrepOptions& options) {
  const std::string root = Trimmed(path);
  json body = {{"path", root},
               {"pattern", pattern},
               {"case_insensitive", !options.case_sensitive},
               {"fixed_strings", options.literal},
               {"max_results", std::clamp(options.max_results + 1, 1, 10000)},
               {"max_file_size", std::to_string(options.max_file_bytes)},
               {"recursive", true}};
  auto data = Call("file/grep", body, path, options.max_seconds + 30);
  if (!data) return data.error();
  GrepResult result;
  result.truncated = data->value("truncated", false);
  for (const json& m : data->value("matches", json::array())) {
    if (!m.is_object()) continue;
    std::string file = m.value("file", "");
    if (HasIgnoredPart(root, file)) continue;
    if (options.glob && DepthBelow(root, file) > 0 &&
        !GlobMatches(*options.glob, file.substr(root == "/" ? 1 : root.size() + 1))) {
      continue;
    }
    if (static_cast<int>(result.matches.size()) >= options.max_results) {
      result.truncated = true;
      break;
    }
    result.matches.push_back(
        {file, m.value("line_number", 0), GrepSummary(m.value("line_content", ""))});
  }
  return result;
}

std::string Base64Encode(const std::string& bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                 (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace corral::runtime
