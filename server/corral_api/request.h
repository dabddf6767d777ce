// The request bodies of corral's own API (/api/corral/v1/..., server/corral_api/api.h), parsed
// and checked before anything runs: a sandbox's spec (in the config file's shape: the same
// keys, sizes and error wording as `corral.yaml` and the CLI), an exec request, and the
// error object every corral-API failure answers with:
//   {"error": {"code": "...", "message": "...", "field": "spec.limits.memory"}}
// Pure apart from the host look-ups Validate() and the mount checks make; unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/code/code_run.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec.h"
#include "server/http/message.h"

namespace corral::server {

struct ApiError {
  int status = 400;
  std::string code;                   // "invalid_json", "invalid_field", "not_found", ...
  std::string message;                // names the field
  std::string field;                  // "" when not about one field
  std::vector<std::string> problems;  // every problem found, when there are several

  HttpResponse ToResponse() const;
};

// A refused field: `status` (422 unless said), code "invalid_field", "FIELD: MESSAGE".
ApiError InvalidField(const std::string& field, const std::string& message, int status = 422);

// What a caller may set over the API, and what only the daemon's config may: host-side
// choices (rootfs, the thread directories, cgroups, unsafe.*) are refused; mounts must
// name host directories under sandbox.base_dir (absolute, normalized, no symlink); a
// seccomp profile must be a built-in name, never a host file.
inline constexpr const char* kSpecKeys[] = {
    "hostname", "user", "workdir", "env", "namespaces", "mounts", "seccomp", "limits", "network"};

struct SandboxCreate {
  std::string name;  // "" = a generated id
  runtime::JailSpec spec;
  double idle_timeout_seconds = 0;
  std::string from_snapshot;  // "from": a snapshot's tag
};

// POST /api/corral/v1/sandboxes: {name?, spec?, idle_timeout?, from?}. `base` is the daemon's
// spec (its config's limits, seccomp, namespaces): the request's spec overrides what it
// sets. 400 for a body that is not a JSON object, 422 with the field otherwise.
std::variant<SandboxCreate, ApiError> ParseSandboxCreate(const std::string& body,
                                                         const runtime::JailSpec& base,
                                                         const std::string& base_dir);

// POST .../exec: {argv | command, env?, workdir?, timeout?, output_limit?, stream?}.
// `command` runs with bash -c. 422 with the field for a wrong type or value. `stream`
// (a boolean: answer with server-sent events, server/corral_api/stream.h) goes to *stream
// when given; without `stream` the field is refused as unknown.
std::variant<runtime::ExecRequest, ApiError> ParseExecRequest(const std::string& body,
                                                              const std::string& sandbox,
                                                              bool* stream = nullptr);

// POST .../code: {code, lang?, timeout?}: a snippet for `corral code run --sandbox`,
// run under `policy` (the daemon's python: section; a request cannot change it).
std::variant<runtime::code::CodeRequest, ApiError> ParseCodeRequest(
    const std::string& body, const std::string& sandbox, const runtime::PythonSpec& policy);

// "" when `name` can name a sandbox ([A-Za-z0-9_-]{1,64}), else why not.
std::string SandboxNameProblem(const std::string& name);

// The body as a JSON object, bounded in size and depth (base/json_input.h): a body that
// cannot be read is one 400, whatever route it was sent to.
std::variant<nlohmann::json, ApiError> ParseBodyObject(const std::string& body);

}  // namespace corral::server
