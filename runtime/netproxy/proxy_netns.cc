#include "runtime/netproxy/proxy_netns.h"

#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace corral::runtime::net {
namespace {

std::string Describe(const ListenSpec& spec) {
  return spec.address.ToString() + ":" + std::to_string(spec.port) +
         (spec.stream ? "/tcp" : "/udp");
}

// In the jail's namespace: `lo` up (it starts down in a new namespace).
Status BringUpLoopback() {
  UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return Error::FromErrno(errno, "socket for SIOCSIFFLAGS");
  struct ifreq request {};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &request) != 0)
    return Error::FromErrno(errno, "SIOCGIFFLAGS lo");
  if ((request.ifr_flags & IFF_UP) != 0) return Ok();
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
  if (::ioctl(s.get(), SIOCSIFFLAGS, &request) != 0)
    return Error::FromErrno(errno, "bringing lo up");
  return Ok();
}

Result<UniqueFd> OpenListener(const ListenSpec& spec) {
  const int type = (spec.stream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC;
  UniqueFd s(::socket(AF_INET, type, 0));
  if (!s) return Error::FromErrno(errno, Describe(spec) + ": socket");
  const int one = 1;
  if (::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return Error::FromErrno(errno, Describe(spec) + ": SO_REUSEADDR");
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(spec.port);
  std::memcpy(&address.sin_addr, spec.address.bytes.data(), 4);
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return Error::FromErrno(errno, Describe(spec) + ": bind");
  }
  if (spec.stream && ::listen(s.get(), SOMAXCONN) != 0) {
    return Error::FromErrno(errno, Describe(spec) + ": listen");
  }
  return s;
}

}  // namespace

Result<std::vector<UniqueFd>> JailNetns::Listen(const std::vector<ListenSpec>& specs) {
  for (const ListenSpec& spec : specs) {
    if (spec.address.family != 4) {
      return Error(ErrorCode::kInternal, Describe(spec) + ": listeners are IPv4 only");
    }
  }
  Result<std::vector<UniqueFd>> result = Error(ErrorCode::kInternal, "helper thread did not run");
  const bool bring_up = !loopback_up_;
  // The helper thread's namespace change dies with it; the I/O thread stays on the host.
  std::thread helper([&] {
    if (::setns(fd_.get(), CLONE_NEWNET) != 0) {
      result = Error::FromErrno(errno, "joining the jail's network namespace (setns)");
      return;
    }
    if (bring_up) {
      if (Status up = BringUpLoopback(); !up) {
        result = up.error();
        return;
      }
    }
    std::vector<UniqueFd> fds;
    for (const ListenSpec& spec : specs) {
      Result<UniqueFd> fd = OpenListener(spec);
      if (!fd) {
        result = fd.error();
        return;
      }
      fds.push_back(std::move(*fd));
    }
    result = std::move(fds);
  });
  helper.join();
  if (result) loopback_up_ = true;
  return result;
}

}  // namespace corral::runtime::net
