// The wire protocol between `corral run` and a pool server (runtime/pool_server.h), over a
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

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/outcome.h"

namespace corral::runtime {

// Largest frame either side accepts: a captured outcome holds two streams of up to
// limits.output_limit_bytes each, JSON-escaped.
inline constexpr size_t kMaxPoolFrameBytes = 256 * 1024 * 1024;

// Sends `body` as one frame, with `fds` attached to its first byte.
Status SendFrame(int socket_fd, const std::string& body, const std::vector<int>& fds = {});
// Sends each of `bodies` as a frame, in one sendmsg when the socket buffer has room (one
// wake-up of the peer instead of one per frame), `fds` attached to the first byte.
Status SendFrames(int socket_fd, const std::vector<std::string_view>& bodies,
                  const std::vector<int>& fds = {});
// Reads one frame (blocking); fds that came with it go to *fds (CLOEXEC). EOF before the
// first byte is kNotFound ("closed"); a short or oversized frame is kIo.
Result<std::string> ReceiveFrame(int socket_fd, std::vector<UniqueFd>* fds = nullptr);

// A RunOutcome in full (not the user-facing OutcomeToJson shape, which folds some fields).
std::string OutcomeToWire(const RunOutcome& outcome);
Result<RunOutcome> OutcomeFromWire(const std::string& json);

// <runtime dir>/pool.sock: where `corral pool` listens and `corral run` looks by default.
std::string DefaultPoolSocket();

}  // namespace corral::runtime
