// The command's own terminal (JailPlan::allocate_tty): a pty of the jail's devpts.
//
// Opened by the command itself, inside the jail's mount namespace and under its new root,
// so /dev/ptmx is the jail's (a symlink to its private devpts instance, mounted with
// newinstance): the slave is /dev/pts/N of the jail, and no host pty or host path is
// involved. Done after the uid change, so the slave belongs to the sandbox user as a
// login terminal does, and before seccomp. The master goes to the parent on the socket
// that is the command's stdin until now (runtime/run/pty.h); the command waits for the
// parent's go-ahead (the window size is set by then), then takes the slave as stdin,
// stdout, stderr and controlling terminal (it is a session leader: HardenIdentity
// called setsid). Syscalls only.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/scm_rights.h"
#include "jail/hardening.h"
#include "jail/setup_record.h"

namespace corral::jail {

namespace {

bool Fail(int report_fd, const char* what) {
  ReportSetupFailure(report_fd, SetupStep::kStdio, errno, what);
  return false;
}

}  // namespace

bool SendFdWithPayload(int socket, int fd, const char* payload, size_t size) {
  iovec iov{const_cast<char*>(payload), size};
  FdControlBuffer<1> control;
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  AttachFds(&msg, &control, &fd, 1);
  ssize_t n;
  do {
    n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(size);
}

bool TakeTerminal(int report_fd) {
  int master = ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return Fail(report_fd, "open /dev/ptmx (the jail's devpts)");
  int unlock = 0;
  if (::ioctl(master, TIOCSPTLCK, &unlock) != 0) return Fail(report_fd, "unlock the pty");
  int slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) return Fail(report_fd, "open the pty's slave");
  if (!SendFdWithPayload(0, master, "t", 1)) return Fail(report_fd, "send the pty to corral");
  ::close(master);
  char go;
  ssize_t n;
  do {
    n = ::recv(0, &go, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n != 1) {
    errno = n == 0 ? EPIPE : errno;
    return Fail(report_fd, "wait for corral to take the pty");
  }
  for (int fd = 0; fd <= 2; ++fd) {
    if (::dup2(slave, fd) < 0) return Fail(report_fd, "dup2 the pty's slave");
  }
  ::close(slave);
  if (::ioctl(0, TIOCSCTTY, 0) != 0)
    return Fail(report_fd, "make the pty the controlling terminal");
  return true;
}

}  // namespace corral::jail
