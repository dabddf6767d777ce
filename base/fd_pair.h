// Pipes and socket pairs as owned pairs of UniqueFd: both ends are closed on every path,
// the error paths included, which raw `int fds[2]` pairs made each caller write by hand
// (and one forgot). Parent side: Error allocates, so not for a jail child after clone().
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// pipe2(2) with `flags` (O_CLOEXEC by default).
inline Result<Pipe> MakePipe(int flags = O_CLOEXEC) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) return Error::FromErrno(errno, "pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Two connected sockets, interchangeable ends.
struct SocketPair {
  UniqueFd one;
  UniqueFd other;
};

// socketpair(2) in AF_UNIX with `type` (SOCK_STREAM | SOCK_CLOEXEC by default).
inline Result<SocketPair> MakeSocketPair(int type = SOCK_STREAM | SOCK_CLOEXEC) {
  int fds[2];
  if (::socketpair(AF_UNIX, type, 0, fds) != 0) return Error::FromErrno(errno, "socketpair");
  return SocketPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace corral
