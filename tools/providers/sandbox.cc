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
