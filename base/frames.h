// Length-prefixed frames over a unix stream socket, with file descriptors attached
// (SCM_RIGHTS): a 4-byte little-endian length, then the body. The pool protocol
// (runtime/pool/pool_protocol.h) and the jail spawner (runtime/run/jail_spawner.h) speak
// JSON bodies over them. Either process; no allocation beyond the body.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral {

// Largest frame either side accepts: a captured outcome holds two streams of up to
// limits.output_limit_bytes each, JSON-escaped.
inline constexpr size_t kMaxFrameBytes = 256 * 1024 * 1024;

// Sends `body` as one frame, with `fds` (at most 8) attached to its first byte.
Status SendFrame(int socket_fd, const std::string& body, const std::vector<int>& fds = {});
// Sends each of `bodies` as a frame, in one sendmsg when the socket buffer has room (one
// wake-up of the peer instead of one per frame), `fds` attached to the first byte.
Status SendFrames(int socket_fd, const std::vector<std::string_view>& bodies,
                  const std::vector<int>& fds = {});
// Reads one frame (blocking); fds that came with it go to *fds (CLOEXEC). EOF before the
// first byte is kNotFound ("closed"); a short or oversized frame is kIo.
Result<std::string> ReceiveFrame(int socket_fd, std::vector<UniqueFd>* fds = nullptr);

}  // namespace corral
