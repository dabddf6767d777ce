// Shared inside of corral's own API (api.cc, files.cc): the JSON of a
// sandbox as `corral ps --json` / `corral stats --json` print it, and the mapping of
// runtime and provider errors to HTTP answers. Not for other callers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/result.h"
#include "runtime/sandboxes/persistent.h"
#include "server/http/message.h"
#include "tools/providers/sandbox.h"

namespace corral::server {

// The fields of `corral ps --json` and `corral stats --json` (cli/sandbox_info_commands.cc
// prints the same object; keep the two in step).
nlohmann::json SandboxInfoJson(const runtime::SandboxInfo& info);

// kNotFound -> 404, kAlreadyExists -> 409, kInvalidArgument -> 422 (field `field`, or the
// field the message's spec line names), kPermissionDenied -> 403, else 500.
HttpResponse RuntimeError(const Error& error, const std::string& field);

// not_found 404, path_escape/permission_denied/read_only 403, too_large 413, is_directory/
// not_directory/invalid_argument/binary 422 (field "path"), unavailable 404, else 500.
HttpResponse FileError(const runtime::SandboxError& error);

}  // namespace corral::server
