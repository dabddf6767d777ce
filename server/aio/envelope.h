// The AIO API's answer shapes (docs/deerflow-contract.md §5): the envelope
// {"success","message","data","hint"}, FileOperationError for file failures (HTTP 200 with
// success:false), the session-not-found 404, and request-body validation that answers
// 422 {"detail":[...]} naming the field the way FastAPI does (the SDK raises
// UnprocessableEntityError on it). Pure functions; no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/http/message.h"
#include "tools/providers/sandbox.h"

namespace corral::server::aio {

using nlohmann::json;

// 200 {"success":true,"message":message,"data":data,"hint":null}.
HttpResponse Ok(json data, const std::string& message = "Operation successful");
// {"success":false,"message":message,"data":data,"hint":null} with `status` (200 by default:
// the AIO API reports operation failures in the envelope).
HttpResponse Fail(const std::string& message, json data = nullptr, int status = 200);
// 404 {"success":false,"message":"Session not found","data":null}: DeerFlow recognises it.
HttpResponse SessionNotFound();
// 404 {"detail":"Not Found"}, 405 {"detail":"Method Not Allowed"} (FastAPI's texts).
HttpResponse RouteNotFound();
HttpResponse MethodNotAllowed();

// FileOperationError {path, operation, message, error_type, retryable, errno, errno_name,
// exception_type} for a failed file operation.
json FileErrorData(const runtime::SandboxError& error, const std::string& path,
                   const std::string& operation);
// 200 success:false with FileErrorData.
HttpResponse FileFail(const runtime::SandboxError& error, const std::string& path,
                      const std::string& operation);

// Reads the fields of a JSON request body, collecting FastAPI-style validation errors
// ({"type","loc":["body",field],"msg","input"}). Absent and null optional fields are
// nullopt; a wrong type or a missing required field is an error. Strings may not hold a
// NUL byte unless allowed (it would cut a path or a command short in the kernel).
class Fields {
 public:
  // An empty body counts as {} (a GET or a POST without a body).
  explicit Fields(const std::string& body);

  std::optional<std::string> String(const std::string& name, bool required = false,
                                    bool allow_nul = false);
  std::optional<double> Number(const std::string& name, bool required = false);
  std::optional<int64_t> Integer(const std::string& name, bool required = false);
  std::optional<bool> Bool(const std::string& name);
  // A JSON object of strings to strings.
  std::optional<std::map<std::string, std::string>> StringMap(const std::string& name);
  // Records a validation error on `name` (for checks of range or enum values).
  void Invalid(const std::string& name, const std::string& type, const std::string& msg);

  bool ok() const { return errors_.empty(); }
  // 422 {"detail":[...]}; 400 when the body is too large or nests too deeply to be read
  // at all (base/json_input.h), whatever the fields.
  HttpResponse Error() const;

 private:
  const json* Find(const std::string& name, bool required);
  void Wrong(const std::string& name, const char* type, const char* msg, const json& input);
  json body_;
  json errors_ = json::array();
  int status_ = 422;
};

}  // namespace corral::server::aio
