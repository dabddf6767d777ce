// The `corral run` side of a pool server (runtime/pool/pool_server.h): hands the command, the
// caller's stdio and, while it runs, the caller's SIGINT/SIGTERM/SIGHUP to the server,
// and returns the outcome the server sends back.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "runtime/run/outcome.h"
#include "runtime/run/supervisor.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

struct PoolAnswer {
  std::optional<RunOutcome> outcome;  // set: the command ran in a pooled jail
  std::string cold_reason;            // else: why not (no server, spec differs, ...)
};

// Runs `spec` through the server listening at `socket_path`. Without a server there
// (no socket file, nobody listening) or for a spec the pool cannot take, returns an
// answer without outcome: run it cold. Errors: the server failed the run or went away
// during it (the jail died with it).
Result<PoolAnswer> RunInPool(const std::string& socket_path, const JailSpec& spec,
                             const RunOptions& options);

// `corral exec` in the server's exec slot for request.sandbox; without a server, or
// without a slot ready for that sandbox yet (the server then prepares one), an answer
// without outcome: exec the normal way.
Result<PoolAnswer> ExecInPool(const std::string& socket_path, const ExecRequest& request);

// Blocks until the server at `socket_path` has its pool full and no exec slot queued.
Status WaitForPoolReady(const std::string& socket_path);

}  // namespace corral::runtime
