// File descriptors passed over a unix socket (SCM_RIGHTS), written once. Only the control
// message is built or read here: each caller keeps its own sendmsg/recvmsg (a frame, a
// one-byte token, a pid ride along, and their retry rules differ). No allocation and no
// locks: safe in a jail child after clone() and in a forked child.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace corral {

// Room for one control message of up to N descriptors, aligned as cmsghdr needs.
template <size_t N>
struct FdControlBuffer {
  alignas(cmsghdr) char bytes[CMSG_SPACE(N * sizeof(int))] = {};
};

// Points `msg` at `buffer`, holding one SCM_RIGHTS message with fds[0..count), count <= N.
template <size_t N>
inline void AttachFds(msghdr* msg, FdControlBuffer<N>* buffer, const int* fds, size_t count) {
  static_assert(N > 0);
  if (count > N) count = N;
  msg->msg_control = buffer->bytes;
  msg->msg_controllen = CMSG_SPACE(count * sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(count * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds, count * sizeof(int));
}

// Points `msg` at `buffer` to receive up to N descriptors (recvmsg sets MSG_CTRUNC beyond).
template <size_t N>
inline void ExpectFds(msghdr* msg, FdControlBuffer<N>* buffer) {
  msg->msg_control = buffer->bytes;
  msg->msg_controllen = sizeof buffer->bytes;
}

// Copies the descriptors recvmsg delivered with `msg` into out[0..max), in order, and
// closes any beyond `max` (a peer that sends more must not leave them open here). Returns
// how many it put in `out`; the caller owns those.
inline size_t TakeReceivedFds(msghdr* msg, int* out, size_t max) {
  size_t taken = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (taken < max) {
        out[taken++] = fd;
      } else {
        ::close(fd);
      }
    }
  }
  return taken;
}

}  // namespace corral
