// corral: the program users run. It serves the plainest `corral run` and `corral exec`
// (cli/front/fast_path.h) from a running pool server itself and hands every other command
// line, and every request the pool declines, to the full CLI (corral-cli, cli/main.cc).
//
// Why a separate program, and one without libc: a pooled run or exec spends about a
// millisecond in the server and its jail, and every process start in front of it counts.
// The full CLI spends more than 1 ms starting (relocating and initialising 4 MB of C++);
// any glibc program spends 0.4-0.5 ms of a VM's time probing the CPU (cli/front/sys.h).
// This one makes a dozen system calls. It speaks the pool protocol
// (runtime/pool/pool_protocol.h) in its "brief" form: the server words the report and picks
// the exit code, so nothing here has to understand an outcome.
#include <asm/unistd.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "cli/front/fast_path.h"
#include "cli/front/full_cli.h"
#include "cli/front/sys.h"
#include "cli/front/text.h"

namespace {

namespace sys = corral::front::sys;
using corral::cli::front::FastKind;
using corral::cli::front::FastRequest;
using corral::front::Buffer;
using corral::front::JsonIntField;
using corral::front::JsonStringField;

constexpr int kCorralFailure = 125;
constexpr uint32_t kMaxReplyBytes = 64 * 1024 * 1024;

int Fail(const char* what, const char* detail = nullptr) {
  Buffer message;
  message.Append("corral: ");
  message.Append(what);
  if (detail != nullptr) message.Append(detail);
  message.Append("\n");
  sys::WriteAll(2, message.c_str());
  return kCorralFailure;
}

// The stop signals, blocked and read from a signalfd while the server runs the command
// (each is forwarded as one byte); the old mask comes back before any exec.
class StopSignals {
 public:
  StopSignals() {
    uint64_t stops = (1ULL << (SIGHUP - 1)) | (1ULL << (SIGINT - 1)) | (1ULL << (SIGTERM - 1));
    sys::Syscall(__NR_rt_sigprocmask, SIG_BLOCK, reinterpret_cast<long>(&stops),
                 reinterpret_cast<long>(&old_), 8);
    fd_ = static_cast<int>(sys::Syscall(__NR_signalfd4, -1, reinterpret_cast<long>(&stops), 8,
                                        SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~StopSignals() {
    if (fd_ >= 0) sys::Syscall(__NR_close, fd_);
    sys::Syscall(__NR_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&old_), 0, 8);
  }
  int fd() const { return fd_; }

 private:
  uint64_t old_ = 0;
  int fd_ = -1;
};

// The socket the request names: "auto" is <runtime dir>/pool.sock, as DefaultPoolSocket().
void SocketPath(const char* pool, char** envp, Buffer* out) {
  if (!sys::StrEq(pool, "auto")) {
    out->Append(pool);
    return;
  }
  // The same choice as runtime::RuntimeDir() (runtime/run/runtime_dir.cc).
  const char* dir = sys::GetEnv(envp, "CORRAL_RUNTIME_DIR");
  const long euid = sys::Syscall(__NR_geteuid);
  const char* xdg = sys::GetEnv(envp, "XDG_RUNTIME_DIR");
  if (dir != nullptr && dir[0] == '/') {
    out->Append(dir);
  } else if (euid == 0) {
    out->Append("/run/corral");
  } else if (xdg != nullptr && xdg[0] == '/') {
    out->Append(xdg);
    out->Append("/corral");
  } else {
    out->Append("/run/user/");
    out->AppendInt(euid);
    out->Append("/corral");
  }
  out->Append("/pool.sock");
}

// A connected socket; -1 if nobody serves there (no such file, or a stale one); -2 for
// another failure, already reported.
int Connect(const char* path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t n = sys::StrLen(path);
  if (n >= sizeof addr.sun_path) {
    Fail("pool socket path too long: ", path);
    return -2;
  }
  for (size_t i = 0; i <= n; ++i) addr.sun_path[i] = path[i];
  int fd = static_cast<int>(sys::Syscall(__NR_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd < 0) {
    Fail("socket: ", sys::ErrnoText(fd));
    return -2;
  }
  long rc = sys::Syscall(__NR_connect, fd, reinterpret_cast<long>(&addr), sizeof addr);
  if (rc == 0) return fd;
  sys::Syscall(__NR_close, fd);
  if (rc == -ENOENT || rc == -ECONNREFUSED) return -1;
  Buffer what;
  what.Append("connect ");
  what.Append(path);
  what.Append(": ");
  Fail(what.c_str(), sys::ErrnoText(rc));
  return -2;
}

void AppendFrame(Buffer* out, const Buffer& body) {
  auto n = static_cast<uint32_t>(body.size());
  char length[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                    static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
  out->Append(length, 4);
  out->Append(body.data(), body.size());
}

void AppendArgv(Buffer* out, char* const* argv) {
  out->Append("[");
  for (char* const* a = argv; *a != nullptr; ++a) {
    if (a != argv) out->Append(",");
    out->AppendJsonString(*a);
  }
  out->Append("]");
}

// Both request frames, the caller's stdin, stdout and stderr attached to the first byte.
bool SendRequest(int connection, const FastRequest& request) {
  Buffer head, body, frames;
  head.Append(R"({"brief":true,"capture":false,"op":")");
  head.Append(request.kind == FastKind::kRun ? "run" : "exec");
  head.Append(R"(","stdin":)");
  head.Append(request.pass_stdin ? "true}" : "false}");
  body.Append(R"({"argv":)");
  AppendArgv(&body, request.command);
  if (request.kind == FastKind::kRun) {
    body.Append(R"(,"default_spec":true})");
  } else {
    body.Append(R"(,"env":[],"sandbox":)");
    body.AppendJsonString(request.sandbox);
    body.Append(R"(,"timeout":null,"workdir":null})");
  }
  AppendFrame(&frames, head);
  AppendFrame(&frames, body);
  if (!frames.ok()) return false;

  const char* data = frames.data();
  size_t left = frames.size();
  bool first = true;
  while (left > 0) {
    iovec iov{const_cast<char*>(data), left};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
    if (first) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(3 * sizeof(int));
      int fds[3] = {0, 1, 2};
      auto* slot = reinterpret_cast<unsigned char*>(CMSG_DATA(cmsg));
      const auto* from = reinterpret_cast<const unsigned char*>(fds);
      for (size_t i = 0; i < sizeof fds; ++i) slot[i] = from[i];
    }
    long sent = sys::Syscall(__NR_sendmsg, connection, reinterpret_cast<long>(&msg), MSG_NOSIGNAL);
    if (sent == -EINTR) continue;
    if (sent <= 0) return false;
    first = false;
    data += sent;
    left -= static_cast<size_t>(sent);
  }
  return true;
}

// Reads exactly n bytes; false at EOF or on an error.
bool ReadExactly(int fd, char* to, size_t n) {
  while (n > 0) {
    long got = sys::Syscall(__NR_read, fd, reinterpret_cast<long>(to), static_cast<long>(n));
    if (got == -EINTR) continue;
    if (got <= 0) return false;
    to += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool ReceiveFrame(int connection, Buffer* frame) {
  unsigned char length[4];
  if (!ReadExactly(connection, reinterpret_cast<char*>(length), 4)) return false;
  uint32_t n = length[0] | (length[1] << 8) | (length[2] << 16) | (uint32_t{length[3]} << 24);
  if (n > kMaxReplyBytes) return false;
  char* to = frame->Reserve(n);
  if (to == nullptr || !ReadExactly(connection, to, n)) return false;
  frame->Commit(n);
  return true;
}

// Waits for the reply frame, forwarding each stop signal we receive as one byte.
bool AwaitReply(int connection, Buffer* frame) {
  StopSignals stops;
  for (;;) {
    pollfd fds[2] = {{connection, POLLIN, 0}, {stops.fd(), POLLIN, 0}};
    long n = sys::Syscall(__NR_poll, reinterpret_cast<long>(fds), stops.fd() >= 0 ? 2 : 1, -1);
    if (n == -EINTR) continue;
    if (n < 0) return false;
    if (fds[1].revents != 0) {
      signalfd_siginfo info;
      if (sys::Syscall(__NR_read, stops.fd(), reinterpret_cast<long>(&info), sizeof info) ==
          static_cast<long>(sizeof info)) {
        auto signo = static_cast<unsigned char>(info.ssi_signo);
        sys::Syscall(__NR_sendto, connection, reinterpret_cast<long>(&signo), 1, MSG_NOSIGNAL, 0,
                     0);
      }
    }
    if (fds[0].revents != 0) return ReceiveFrame(connection, frame);
  }
}

// SPDLOG_LEVEL=debug (or trace) makes the full CLI say why a run was not pooled; so here.
bool DebugWanted(char** envp) {
  const char* level = sys::GetEnv(envp, "SPDLOG_LEVEL");
  if (level == nullptr) return false;
  for (const char* p = level; *p != '\0'; ++p) {
    if (sys::StartsWith(p, "debug") || sys::StartsWith(p, "trace")) return true;
  }
  return false;
}

int ExecFullCliWithPoolOff(int argc, char** argv, char** envp) {
  Buffer storage;
  auto* args = reinterpret_cast<char**>(storage.Reserve((argc + 3) * sizeof(char*)));
  if (args == nullptr) return Fail("out of memory");
  corral::cli::front::WithPoolOff(argc, argv, args);
  return corral::cli::front::ExecFullCli(args, envp);
}

}  // namespace

int FrontMain(int argc, char** argv, char** envp) {
  FastRequest request;
  if (!corral::cli::front::ParseFastPath(argc, argv, &request)) {
    return corral::cli::front::ExecFullCli(argv, envp);
  }
  Buffer socket;
  SocketPath(request.pool, envp, &socket);
  int connection = Connect(socket.c_str());
  if (connection == -2) return kCorralFailure;
  if (connection == -1) {
    // A socket the user named must answer: the full CLI says so when it does not.
    if (!sys::StrEq(request.pool, "auto")) return corral::cli::front::ExecFullCli(argv, envp);
    return ExecFullCliWithPoolOff(argc, argv, envp);
  }
  Buffer reply;
  bool sent = SendRequest(connection, request);
  // If the server hung up before taking the request, what it said first (a refusal) is
  // the answer; otherwise the reply.
  bool answered = sent ? AwaitReply(connection, &reply) : ReceiveFrame(connection, &reply);
  sys::Syscall(__NR_close, connection);
  if (!answered) {
    Buffer what;
    what.Append("pool server at ");
    what.Append(socket.c_str());
    what.Append(sent ? " went away during the run" : " refused the request");
    return Fail(what.c_str());
  }
  Buffer kind;
  JsonStringField(reply.data(), reply.size(), "kind", &kind);
  if (sys::StrEq(kind.c_str(), "outcome")) {
    long exit_code = kCorralFailure;
    Buffer report;
    if (!JsonIntField(reply.data(), reply.size(), "exit_code", &exit_code) ||
        !JsonStringField(reply.data(), reply.size(), "report", &report)) {
      return Fail("pool server: malformed reply");
    }
    sys::WriteAll(2, report.c_str());
    return static_cast<int>(exit_code);
  }
  if (sys::StrEq(kind.c_str(), "cold")) {
    if (DebugWanted(envp)) {
      Buffer reason;
      JsonStringField(reply.data(), reply.size(), "reason", &reason);
      Fail("debug: not pooled: ", reason.c_str());
    }
    return ExecFullCliWithPoolOff(argc, argv, envp);
  }
  Buffer message;
  if (sys::StrEq(kind.c_str(), "error") &&
      JsonStringField(reply.data(), reply.size(), "message", &message)) {
    return Fail("pool server: ", message.c_str());
  }
  return Fail("pool server: unexpected reply");
}
