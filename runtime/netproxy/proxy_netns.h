// Listening sockets in the jail's network namespace, for a proxy that runs in the host's.
//
// A socket belongs to the network namespace of the thread that created it, for its whole
// life; which thread later uses it does not matter. So corral-netproxy never leaves the
// host namespace on its I/O thread: for each batch of listeners a short-lived helper
// thread joins the jail's namespace (setns, which changes only the calling thread), brings
// `lo` up the first time, creates and binds the sockets, and ends. The I/O thread then
// serves them (Asio's acceptor::assign) and connects out, in the host namespace.
//
// Owns the namespace fd. Used from the proxy's I/O thread (one call at a time).
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/net/policy.h"

namespace corral::runtime::net {

struct ListenSpec {
  bool stream = true;  // TCP (listening) or UDP (bound)
  IpAddress address;   // IPv4
  uint16_t port = 0;
};

class JailNetns {
 public:
  explicit JailNetns(UniqueFd netns_fd) : fd_(std::move(netns_fd)) {}

  // All the sockets of `specs`, in order (non-blocking, close-on-exec), or the first
  // error naming the address ("127.0.0.1:53/udp: bind: Address already in use").
  Result<std::vector<UniqueFd>> Listen(const std::vector<ListenSpec>& specs);

 private:
  UniqueFd fd_;
  bool loopback_up_ = false;
};

}  // namespace corral::runtime::net
