#include "server/aio/envelope.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/json_input.h"

namespace corral::server::aio {
namespace {

using runtime::SandboxErrc;

json Envelope(bool success, const std::string& message, json data) {
  return {{"success", success}, {"message", message}, {"data", std::move(data)}, {"hint", nullptr}};
}

struct ErrorKind {
  const char* error_type;
  const char* exception_type;
  int default_errno;
};

ErrorKind KindOf(const runtime::SandboxError& e) {
  switch (e.sys_errno) {  // the kernel's word first, where there is one
    case ENOSPC:
    case EDQUOT:
      return {"no_space_left", "OSError", ENOSPC};
    case EROFS:
      return {"read_only_filesystem", "OSError", EROFS};
    case EEXIST:
      return {"already_exists", "FileExistsError", EEXIST};
    default:
      break;
  }
  switch (e.code) {
    case SandboxErrc::kNotFound:
      return {"not_found", "FileNotFoundError", ENOENT};
    case SandboxErrc::kPermissionDenied:
      return {"permission_denied", "PermissionError", EACCES};
    case SandboxErrc::kPathEscape:
      return {"invalid_path", "PermissionError", EACCES};
    case SandboxErrc::kIsDirectory:
      return {"invalid_target", "IsADirectoryError", EISDIR};
    case SandboxErrc::kNotDirectory:
      return {"invalid_target", "NotADirectoryError", ENOTDIR};
    case SandboxErrc::kReadOnly:
      return {"read_only_filesystem", "OSError", EROFS};
    case SandboxErrc::kTooLarge:
      return {"invalid_target", "OSError", EFBIG};
    case SandboxErrc::kBinary:
      return {"decode_error", "UnicodeDecodeError", 0};
    case SandboxErrc::kInvalidRegex:
      return {"invalid_target", "re.error", EINVAL};
    case SandboxErrc::kInvalidArgument:
      return {"invalid_path", "ValueError", EINVAL};
    case SandboxErrc::kUnavailable:
    case SandboxErrc::kIo:
      break;
  }
  return {"io_error", "OSError", EIO};
}

}  // namespace

HttpResponse Ok(json data, const std::string& message) {
  return HttpResponse::Json(200, Envelope(true, message, std::move(data)));
}

HttpResponse Fail(const std::string& message, json data, int status) {
  return HttpResponse::Json(status, Envelope(false, message, std::move(data)));
}

HttpResponse SessionNotFound() {
  // Exactly the body DeerFlow matches (contract §5, issue #1768).
  return HttpResponse::Json(
      404, {{"success", false}, {"message", "Session not found"}, {"data", nullptr}});
}
HttpResponse RouteNotFound() { return HttpResponse::Json(404, {{"detail", "Not Found"}}); }
HttpResponse MethodNotAllowed() {
  return HttpResponse::Json(405, {{"detail", "Method Not Allowed"}});
}

json FileErrorData(const runtime::SandboxError& error, const std::string& path,
                   const std::string& operation) {
  ErrorKind kind = KindOf(error);
  int err = error.sys_errno != 0 ? error.sys_errno : kind.default_errno;
  const char* name = err != 0 ? ::strerrorname_np(err) : nullptr;
  const bool retryable = err == EAGAIN || err == EINTR || err == EBUSY || err == ETIMEDOUT ||
                         error.code == SandboxErrc::kUnavailable;
  return {{"path", path},
          {"operation", operation},
          {"message", error.message},
          {"error_type", kind.error_type},
          {"retryable", retryable},
          {"errno", err != 0 ? json(err) : json(nullptr)},
          {"errno_name", name != nullptr ? json(name) : json(nullptr)},
          {"exception_type", kind.exception_type}};
}

HttpResponse FileFail(const runtime::SandboxError& error, const std::string& path,
                      const std::string& operation) {
  return Fail(error.message, FileErrorData(error, path, operation));
}

Fields::Fields(const std::string& body) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
    body_ = json::object();
    return;
  }
  auto parsed = ParseJsonInput(body, kHttpBodyJsonLimits);
  if (auto* error = std::get_if<JsonInputError>(&parsed)) {
    if (error->problem != JsonInputProblem::kSyntax) status_ = 400;
    errors_.push_back({{"type", "json_invalid"},
                       {"loc", {"body", static_cast<int64_t>(error->byte)}},
                       {"msg", "JSON decode error"},
                       {"input", json::object()},
                       {"ctx", {{"error", error->message}}}});
    return;
  }
  body_ = std::get<json>(std::move(parsed));
  if (!body_.is_object()) {
    errors_.push_back(
        {{"type", "model_attributes_type"},
         {"loc", {"body"}},
         {"msg", "Input should be a valid dictionary or object to extract fields from"},
         {"input", body_}});
  }
}

const json* Fields::Find(const std::string& name, bool required) {
  if (!body_.is_object()) return nullptr;
  auto it = body_.find(name);
  if (it == body_.end() || it->is_null()) {
    if (required) Wrong(name, "missing", "Field required", nullptr);
    return nullptr;
  }
  return &*it;
}

void Fields::Wrong(const std::string& name, const char* type, const char* msg, const json& input) {
  errors_.push_back({{"type", type}, {"loc", {"body", name}}, {"msg", msg}, {"input", input}});
}

void Fields::Invalid(const std::string& name, const std::string& type, const std::string& msg) {
  json input = body_.is_object() && body_.contains(name) ? body_[name] : json(nullptr);
  errors_.push_back({{"type", type}, {"loc", {"body", name}}, {"msg", msg}, {"input", input}});
}

std::optional<std::string> Fields::String(const std::string& name, bool required, bool allow_nul) {
  const json* v = Find(name, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    Wrong(name, "string_type", "Input should be a valid string", *v);
    return std::nullopt;
  }
  std::string s = v->get<std::string>();
  if (!allow_nul && s.find('\0') != std::string::npos) {
    Wrong(name, "value_error", "Value error, must not contain a NUL byte", *v);
    return std::nullopt;
  }
  return s;
}

std::optional<double> Fields::Number(const std::string& name, bool required) {
  const json* v = Find(name, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>())) {
    Wrong(name, "float_type", "Input should be a valid number", *v);
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<int64_t> Fields::Integer(const std::string& name, bool required) {
  const json* v = Find(name, required);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
      return static_cast<int64_t>(d);
    }
    Wrong(name, "int_from_float",
          "Input should be a valid integer, got a number with a fractional part", *v);
    return std::nullopt;
  }
  Wrong(name, "int_type", "Input should be a valid integer", *v);
  return std::nullopt;
}

std::optional<bool> Fields::Bool(const std::string& name) {
  const json* v = Find(name, false);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    Wrong(name, "bool_type", "Input should be a valid boolean", *v);
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::map<std::string, std::string>> Fields::StringMap(const std::string& name) {
  const json* v = Find(name, false);
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) {
    Wrong(name, "dict_type", "Input should be a valid dictionary", *v);
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, val] : v->items()) {
    if (val.is_null()) continue;  // Optional[str] in the SDK: nothing to set
    if (!val.is_string()) {
      errors_.push_back({{"type", "string_type"},
                         {"loc", {"body", name, k}},
                         {"msg", "Input should be a valid string"},
                         {"input", val}});
      continue;
    }
    std::string s = val.get<std::string>();
    if (k.find('\0') != std::string::npos || s.find('\0') != std::string::npos) {
      errors_.push_back({{"type", "value_error"},
                         {"loc", {"body", name, k}},
                         {"msg", "Value error, must not contain a NUL byte"},
                         {"input", nullptr}});
      continue;
    }
    out[k] = std::move(s);
  }
  return out;
}

HttpResponse Fields::Error() const { return HttpResponse::Json(status_, {{"detail", errors_}}); }

}  // namespace corral::server::aio
