// The user's --pool choice for `corral run` and `corral exec`: through a pool server
// (runtime/pool/pool_client.h) when one takes the request, else the normal way.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/run/outcome.h"
#include "runtime/run/supervisor.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// `pool` is the user's setting: "auto" (the default socket, if a server listens there),
// "off", or a socket path that must answer. These run through it when it can take the
// request, else the normal way (RunJail, ExecInSandbox); SPDLOG_LEVEL=debug says why.
Result<RunOutcome> RunPooledOrCold(const std::string& pool, const JailSpec& spec,
                                   const RunOptions& options);
Result<RunOutcome> ExecPooledOrDirect(const std::string& pool, const ExecRequest& request);

}  // namespace corral::runtime
