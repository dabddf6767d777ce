#include "runtime/run/pty.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/scm_rights.h"

namespace corral::runtime {

namespace {

// How long the command may take from its clone to sending the master.
constexpr int kMasterTimeoutMs = 30000;

// The master fd sent with SCM_RIGHTS, or an invalid fd.
UniqueFd ReceiveMaster(int socket) {
  char byte;
  iovec iov{&byte, 1};
  FdControlBuffer<1> control;
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ExpectFds(&msg, &control);
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return UniqueFd();
  int fd = -1;
  UniqueFd master(TakeReceivedFds(&msg, &fd, 1) == 1 ? fd : -1);
  return n == 1 ? std::move(master) : UniqueFd();
}

int TerminalOf(const Stdio& io) {
  for (int fd : {io.caller_stdout, io.caller_stdin, io.caller_stderr}) {
    if (::isatty(fd)) return fd;
  }
  return -1;
}

}  // namespace

PtySession::~PtySession() {
  if (saved) (void)::tcsetattr(raw_fd, TCSADRAIN, &*saved);
  if (winch) ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
}

void PtySession::Resize() const {
  winsize size{};
  if (size_from >= 0 && ::ioctl(size_from, TIOCGWINSZ, &size) == 0) {
    (void)::ioctl(master, TIOCSWINSZ, &size);
  }
}

void PtySession::OnWinch() const {
  signalfd_siginfo info;
  while (::read(winch.get(), &info, sizeof info) == sizeof info) {
  }
  Resize();
}

Status AcceptTerminal(Stdio& io, int pidfd, bool raw) {
  pollfd fds[2] = {{io.tty_socket.read.get(), POLLIN, 0}, {pidfd, POLLIN, 0}};
  int n;
  do {
    n = ::poll(fds, 2, kMasterTimeoutMs);
  } while (n < 0 && errno == EINTR);
  if (n <= 0 || (fds[0].revents & POLLIN) == 0) return Ok();  // no terminal: see the outcome
  UniqueFd master = ReceiveMaster(io.tty_socket.read.get());
  if (!master) return Ok();
  auto session = std::make_unique<PtySession>();
  session->master = master.get();
  session->size_from = TerminalOf(io);
  session->Resize();
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  if (session->size_from >= 0) {
    ::sigprocmask(SIG_BLOCK, &winch, &session->old_mask);
    session->winch.Reset(::signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!session->winch) ::sigprocmask(SIG_SETMASK, &session->old_mask, nullptr);
  }
  ::fcntl(master.get(), F_SETFL, O_NONBLOCK);  // our own file description: the command's
                                               // is the slave
  if (raw && ::isatty(io.caller_stdin)) {
    termios t;
    if (::tcgetattr(io.caller_stdin, &t) == 0) {
      session->saved = t;
      session->raw_fd = io.caller_stdin;
      ::cfmakeraw(&t);
      (void)::tcsetattr(io.caller_stdin, TCSADRAIN, &t);
    }
  }
  if (io.pass_stdin) {
    io.in_relay.emplace();
    io.in_relay->source = io.caller_stdin;
    io.in_relay->sink.Reset(::fcntl(master.get(), F_DUPFD_CLOEXEC, 3));
    io.in_relay->eof_as_eot = true;
  }
  // The go-ahead: the command takes its terminal and execs.
  (void)::send(io.tty_socket.read.get(), "g", 1, MSG_NOSIGNAL);
  io.tty_socket.read.Reset();
  io.out.read = std::move(master);
  io.out_relay.emplace();
  io.out_relay->dest = io.caller_stdout;
  io.pty = std::move(session);
  return Ok();
}

}  // namespace corral::runtime
