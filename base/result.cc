#include "base/result.h"

#include <cerrno>
#include <cstring>

namespace corral {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kAlreadyExists:
      return "already_exists";
    case ErrorCode::kFailedPrecondition:
      return "failed_precondition";
    case ErrorCode::kPermissionDenied:
      return "permission_denied";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kSetupFailed:
      return "setup_failed";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

Error Error::FromErrno(int err, const std::string& context) {
  ErrorCode code = ErrorCode::kIo;
  switch (err) {
    case ENOENT:
      code = ErrorCode::kNotFound;
      break;
    case EEXIST:
      code = ErrorCode::kAlreadyExists;
      break;
    case EACCES:
    case EPERM:
    case EROFS:
      code = ErrorCode::kPermissionDenied;
      break;
    case ENOSYS:
    case EOPNOTSUPP:
      code = ErrorCode::kUnsupported;
      break;
    case EINVAL:
      code = ErrorCode::kInvalidArgument;
      break;
    default:
      break;
  }
  return Error(code, context + ": " + std::strerror(err), err);
}

Error Error::WithContext(const std::string& context) const {
  return Error(code_, context + ": " + message_, errno_);
}

}  // namespace corral
