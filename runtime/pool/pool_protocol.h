// The wire protocol between `corral run` and a pool server (runtime/pool/pool_server.h), over a
// unix stream socket. Both sides are corral; the socket is root's (0600 in the runtime
// directory) and the server checks its peer's uid.
//
// Frames are a 4-byte little-endian length and a JSON object. The client's first frame
// carries its stdin, stdout and stderr as SCM_RIGHTS:
//   client: {"op":"run","capture":bool,"stdin":bool} + 3 fds, then a frame with SpecToJson
//           then, while the command runs, single bytes: a signal the client received
//   client: {"op":"exec","capture":bool,"stdin":bool} + 3 fds, then a frame with
//           {"sandbox","argv","env","workdir","timeout"}; then signals as for "run"
//   client: {"op":"wait_ready"}   (answered once the pool is full and no exec slot is
//           being prepared: for benchmarks, tests)
//   A "run" spec frame may also be {"default_spec":true,"argv":[...]}: the spec `corral run`
//   builds without options. A request head with "brief":true (the front program,
//   cli/front) is answered with one frame {"kind":"outcome","exit_code":N,"report":TEXT}
//   instead of the two below: the CLI's exit code and what it prints on stderr.
//   server: {"kind":"outcome"}, then a frame with OutcomeToWire: it ran in a pooled jail
//           {"kind":"cold","reason":"..."}        the pool cannot run it: run it yourself
//           {"kind":"ready"} | {"kind":"error","message":"..."}
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/frames.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/run/outcome.h"

namespace corral::runtime {

// Frames: base/frames.h (SendFrame, SendFrames, ReceiveFrame, kMaxFrameBytes).

// A RunOutcome in full (not the user-facing OutcomeToJson shape, which folds some fields).
std::string OutcomeToWire(const RunOutcome& outcome);
Result<RunOutcome> OutcomeFromWire(const std::string& json);

// <runtime dir>/pool.sock: where `corral pool` listens and `corral run` looks by default.
std::string DefaultPoolSocket();

}  // namespace corral::runtime
