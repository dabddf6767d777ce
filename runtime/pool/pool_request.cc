#include "runtime/pool/pool_request.h"

#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "base/json_nul.h"
#include "runtime/spec/spec_json.h"

namespace corral::runtime {

namespace {

// j.value(key, fallback) throws type_error when the key holds another type, which no
// caller here catches (a pool server thread would end the process: found by
// tests/fuzz/fuzz_pool_protocol). This says which key instead.
Status ReadBool(const nlohmann::json& j, const char* key, bool* out) {
  if (!j.contains(key) || j.at(key).is_null()) return Ok();
  if (!j.at(key).is_boolean()) {
    return Error(ErrorCode::kInvalidArgument,
                 std::string(key) + ": expected a boolean, got " + j.at(key).type_name());
  }
  *out = j.at(key).get<bool>();
  return Ok();
}

// A frame's document, bounded in size and depth (base/json_input.h). A syntax error gives a
// discarded document, which each parser below answers in its own way.
Result<nlohmann::json> FrameJson(const std::string& frame) {
  auto parsed = ParseJsonInput(frame);
  if (auto* error = std::get_if<JsonInputError>(&parsed)) {
    if (error->problem == JsonInputProblem::kSyntax) {
      return nlohmann::json(nlohmann::json::value_t::discarded);
    }
    return Error(ErrorCode::kInvalidArgument, error->message);
  }
  return std::get<nlohmann::json>(std::move(parsed));
}

}  // namespace

Result<PoolRequestHead> ParsePoolRequestHead(const std::string& frame) {
  auto parsed = FrameJson(frame);
  if (!parsed) return parsed.error().WithContext("request");
  const nlohmann::json& j = *parsed;
  // A NUL in any string of a frame is refused before any of it is used (base/json_nul.h).
  if (auto nul = NulProblem(j)) return Error(ErrorCode::kInvalidArgument, "request: " + *nul);
  PoolRequestHead head;
  if (!j.is_object()) return head;  // no op: the caller's "malformed request"
  if (j.contains("op") && !j.at("op").is_null()) {
    if (!j.at("op").is_string()) {
      return Error(ErrorCode::kInvalidArgument,
                   std::string("op: expected a string, got ") + j.at("op").type_name());
    }
    head.op = j.at("op").get<std::string>();
  }
  RETURN_IF_ERROR(ReadBool(j, "capture", &head.capture));
  RETURN_IF_ERROR(ReadBool(j, "stdin", &head.pass_stdin));
  RETURN_IF_ERROR(ReadBool(j, "brief", &head.brief));
  return head;
}

Result<JailSpec> ParseRunSpecFrame(const std::string& frame) {
  auto parsed = FrameJson(frame);
  if (!parsed) return parsed.error().WithContext("sandbox spec");
  const nlohmann::json& j = *parsed;
  if (auto nul = NulProblem(j)) return Error(ErrorCode::kInvalidArgument, *nul);
  bool default_spec = false;
  if (j.is_object()) {
    if (auto st = ReadBool(j, "default_spec", &default_spec); !st) {
      return st.error().WithContext("sandbox spec");
    }
  }
  if (!default_spec) return SpecFromJson(frame);
  JailSpec spec;
  try {
    j.at("argv").get_to(spec.argv);
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidArgument, std::string("sandbox spec: ") + e.what());
  }
  return spec;
}

Result<ExecRequest> ParseExecFrame(const std::string& frame) {
  ExecRequest request;
  auto parsed = ParseJsonInputOrError(frame);
  if (!parsed) return parsed.error().WithContext("exec request");
  try {
    const nlohmann::json& j = *parsed;
    if (auto nul = NulProblem(j)) {
      return Error(ErrorCode::kInvalidArgument, "exec request: " + *nul);
    }
    j.at("sandbox").get_to(request.sandbox);
    j.at("argv").get_to(request.argv);
    j.at("env").get_to(request.env);
    if (!j.at("workdir").is_null()) request.workdir = j["workdir"].get<std::string>();
    if (!j.at("timeout").is_null()) request.timeout_seconds = j["timeout"].get<double>();
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidArgument, std::string("exec request: ") + e.what());
  }
  return request;
}

}  // namespace corral::runtime
