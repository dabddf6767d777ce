#include "tools/providers/sandbox.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace corral::runtime {

const char* SandboxErrcName(SandboxErrc code) {
  switch (code) {
    case SandboxErrc::kNotFound:
      return "not_found";
    case SandboxErrc::kPermissionDenied:
      return "permission_denied";
    case SandboxErrc::kPathEscape:
      return "path_escape";
    case SandboxErrc::kIsDirectory:
      return "is_directory";
    case SandboxErrc::kNotDirectory:
      return "not_directory";
    case SandboxErrc::kReadOnly:
      return "read_only";
    case SandboxErrc::kTooLarge:
      return "too_large";
    case SandboxErrc::kBinary:
      return "binary";
    case SandboxErrc::kInvalidRegex:
      return "invalid_regex";
    case SandboxErrc::kInvalidArgument:
      return "invalid_argument";
    case SandboxErrc::kUnavailable:
      return "unavailable";
    case SandboxErrc::kIo:
      return "io";
  }
  return "io";
}

SandboxError ErrorFromErrno(int err, const std::string& what) {
  SandboxErrc code = SandboxErrc::kIo;
  switch (err) {
    case ENOENT:
      code = SandboxErrc::kNotFound;
      break;
    case EACCES:
    case EPERM:
      code = SandboxErrc::kPermissionDenied;
      break;
    case EXDEV:
      code = SandboxErrc::kPathEscape;
      break;
    case EISDIR:
      code = SandboxErrc::kIsDirectory;
      break;
    case ENOTDIR:
      code = SandboxErrc::kNotDirectory;
      break;
    case EROFS:
      code = SandboxErrc::kReadOnly;
      break;
    case EFBIG:
      code = SandboxErrc::kTooLarge;
      break;
    case ELOOP:
      code = SandboxErrc::kPermissionDenied;
      break;  // symlink loop or O_NOFOLLOW
    default:
      break;
  }
  return {code, what + ": " + std::strerror(err), err};
}

SbStatus RefuseNul(std::string_view value, const std::string& what) {
  if (value.find('\0') == std::string_view::npos) return {};
  return SandboxError{SandboxErrc::kInvalidArgument, what + " must not contain a NUL byte", EINVAL};
}

SbResult<CommandResult> Sandbox::ExecuteCommand(const std::string& command, const EnvList& env,
                                                std::optional<double> timeout) {
  RETURN_SB_IF_ERROR(RefuseNul(command, "command"));
  for (const auto& [name, value] : env) {
    RETURN_SB_IF_ERROR(RefuseNul(name, "env name"));
    RETURN_SB_IF_ERROR(RefuseNul(value, "env value of " + name));
  }
  return DoExecuteCommand(command, env, timeout);
}

SbResult<std::string> Sandbox::ReadFile(const std::string& path, std::optional<int> start_line,
                                        std::optional<int> end_line) {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  return DoReadFile(path, start_line, end_line);
}

SbResult<std::string> Sandbox::DownloadFile(const std::string& path) {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  return DoDownloadFile(path);
}

SbResult<std::vector<std::string>> Sandbox::ListDir(const std::string& path, int max_depth) {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  return DoListDir(path, max_depth);
}

SbStatus Sandbox::WriteFile(const std::string& path, const std::string& content, bool append) {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  return DoWriteFile(path, content, append);
}

SbStatus Sandbox::UpdateFile(const std::string& path, const std::string& bytes) {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  return DoUpdateFile(path, bytes);
}

SbResult<GlobResult> Sandbox::Glob(const std::string& path, const std::string& pattern,
                                   bool include_dirs, int max_results) {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  // fnmatch() reads the pattern as a C string: a NUL would cut it short.
  RETURN_SB_IF_ERROR(RefuseNul(pattern, "glob pattern"));
  return DoGlob(path, pattern, include_dirs, max_results);
}

// The grep pattern itself may hold a NUL: RE2 takes it with its length.
SbResult<GrepResult> Sandbox::Grep(const std::string& path, const std::string& pattern,
                                   const GrepOptions& options) {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  if (options.glob) RETURN_SB_IF_ERROR(RefuseNul(*options.glob, "glob"));
  return DoGrep(path, pattern, options);
}

std::string SecondsText(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return std::string(buf) + (seconds == 1 ? " second" : " seconds");
}

std::string FormatCommandText(const std::string& out, const std::string& err, int exit_code,
                              std::optional<double> timed_out_after) {
  std::string text = out;
  if (!err.empty()) text += text.empty() ? err : "\nStd Error:\n" + err;
  if (timed_out_after) {
    if (!text.empty()) text += "\n";
    text += "Command timed out after " + SecondsText(*timed_out_after) +
            " and was terminated. To run a long-lived process such as a web server, start it "
            "in the background and redirect its output, e.g. `nohup ./server > server.log "
            "2>&1 &`.";
  } else if (exit_code != 0) {
    text += "\nExit Code: " + std::to_string(exit_code);
  }
  return text.empty() ? "(no output)" : text;
}

}  // namespace corral::runtime
