#include "base/frames.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

#include "base/scm_rights.h"

namespace corral {

namespace {

constexpr size_t kMaxFrameFds = 8;

// Reads exactly `size` bytes; false at EOF or on an error (errno set; 0 for EOF).
bool ReceiveAll(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::recv(fd, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Status SendFrames(int socket_fd, const std::vector<std::string_view>& bodies,
                  const std::vector<int>& fds) {
  if (fds.size() > kMaxFrameFds) return Error(ErrorCode::kInvalidArgument, "socket: too many fds");
  std::vector<std::array<unsigned char, 4>> headers(bodies.size());
  std::vector<iovec> iov;
  for (size_t i = 0; i < bodies.size(); ++i) {
    if (bodies[i].size() > kMaxFrameBytes) {
      return Error(ErrorCode::kInvalidArgument, "socket: frame too large");
    }
    auto size = static_cast<uint32_t>(bodies[i].size());
    headers[i] = {static_cast<unsigned char>(size), static_cast<unsigned char>(size >> 8),
                  static_cast<unsigned char>(size >> 16), static_cast<unsigned char>(size >> 24)};
    iov.push_back({headers[i].data(), headers[i].size()});
    if (size > 0) iov.push_back({const_cast<char*>(bodies[i].data()), bodies[i].size()});
  }
  FdControlBuffer<kMaxFrameFds> control;
  msghdr msg{};
  if (!fds.empty()) AttachFds(&msg, &control, fds.data(), fds.size());  // to the first byte
  // Everything in one sendmsg where the socket buffer takes it: each send wakes the peer.
  size_t first = 0;
  while (first < iov.size()) {
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "socket: send");
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
    auto sent = static_cast<size_t>(n);
    while (first < iov.size() && sent >= iov[first].iov_len) sent -= iov[first++].iov_len;
    if (sent > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + sent;
      iov[first].iov_len -= sent;
    }
  }
  return Ok();
}

Status SendFrame(int socket_fd, const std::string& body, const std::vector<int>& fds) {
  return SendFrames(socket_fd, {body}, fds);
}

Result<std::string> ReceiveFrame(int socket_fd, std::vector<UniqueFd>* fds) {
  unsigned char header[4];
  iovec iov{header, sizeof header};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  FdControlBuffer<kMaxFrameFds> control;
  ExpectFds(&msg, &control);
  ssize_t n;
  do {
    n = ::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Error::FromErrno(errno, "socket: receive");
  if (n == 0) return Error(ErrorCode::kNotFound, "socket: closed");
  // Take ownership of whatever fds came, before anything can fail.
  int raw[kMaxFrameFds];
  std::vector<UniqueFd> received;
  for (size_t i = 0, count = TakeReceivedFds(&msg, raw, kMaxFrameFds); i < count; ++i) {
    received.emplace_back(raw[i]);
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0) {
    return Error(ErrorCode::kIo, "socket: too many descriptors in a frame");
  }
  if (n < static_cast<ssize_t>(sizeof header) &&
      !ReceiveAll(socket_fd, reinterpret_cast<char*>(header) + n, sizeof header - n)) {
    return Error(ErrorCode::kIo, "socket: frame cut short");
  }
  uint32_t size =
      header[0] | (header[1] << 8) | (header[2] << 16) | (static_cast<uint32_t>(header[3]) << 24);
  if (size > kMaxFrameBytes) return Error(ErrorCode::kIo, "socket: frame too large");
  std::string body(size, '\0');
  if (!ReceiveAll(socket_fd, body.data(), size)) {
    return Error(ErrorCode::kIo, "socket: frame cut short");
  }
  if (fds != nullptr) *fds = std::move(received);
  return body;
}

}  // namespace corral
