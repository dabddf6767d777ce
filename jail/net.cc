// Network: a new network namespace has only `lo`, and it starts down.
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "jail/hardening.h"
#include "jail/setup_record.h"

namespace corral::jail {

bool BringUpLoopback(int report_fd) {
  int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) {
    ReportSetupFailure(report_fd, SetupStep::kNetwork, errno, "socket for lo");
    return false;
  }
  ifreq req;
  std::memset(&req, 0, sizeof req);
  std::memcpy(req.ifr_name, "lo", 3);
  bool ok = ::ioctl(sock, SIOCGIFFLAGS, &req) == 0;
  // Up already in a namespace the proxy prepared, where a jail with a user namespace of
  // its own may not change it (no CAP_NET_ADMIN over that namespace).
  if (ok && (req.ifr_flags & IFF_UP) == 0) {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
    ok = ::ioctl(sock, SIOCSIFFLAGS, &req) == 0;
  }
  int err = errno;
  ::close(sock);
  if (!ok) {
    ReportSetupFailure(report_fd, SetupStep::kNetwork, err, "bring up lo");
    return false;
  }
  return true;
}

}  // namespace corral::jail
