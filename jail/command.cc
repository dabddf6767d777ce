#include "jail/command.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/scm_rights.h"

namespace corral::jail {

namespace {

constexpr uint32_t kMagic = 0x636d6432;  // "cmd2"
constexpr uint32_t kHoldAfterReport = 1;

// Encoded form: Header, then argc + envc + pathc NUL-terminated strings, then workdir.
struct Header {
  uint32_t magic;
  uint32_t argc;
  uint32_t envc;
  uint32_t pathc;
  uint32_t flags;
};

void AppendStrings(std::string* out, const std::vector<std::string>& strings) {
  for (const std::string& s : strings) {
    out->append(s);
    out->push_back('\0');
  }
}

// Child-side storage: one command per process lifetime.
alignas(8) char g_buffer[kMaxDeferredCommandBytes + 1];
char* g_argv[kMaxDeferredStrings + 1];
char* g_envp[kMaxDeferredStrings + 1];
const char* g_path_dirs[kMaxDeferredStrings + 1];

// Points `count` entries of out[] at consecutive strings from *pos; false if the buffer
// ends first.
template <typename Ptr>
bool TakeStrings(size_t* pos, size_t end, uint32_t count, Ptr* out) {
  for (uint32_t i = 0; i < count; ++i) {
    if (*pos >= end) return false;
    char* s = g_buffer + *pos;
    void* nul = std::memchr(s, '\0', end - *pos);
    if (nul == nullptr) return false;
    out[i] = s;
    *pos = static_cast<size_t>(static_cast<char*>(nul) - g_buffer) + 1;
  }
  out[count] = nullptr;
  return true;
}

}  // namespace

Result<std::string> EncodeCommand(const DeferredCommand& c) {
  if (c.argv.empty()) return Error(ErrorCode::kInvalidArgument, "deferred command: empty argv");
  if (c.argv.size() > kMaxDeferredStrings || c.envp.size() > kMaxDeferredStrings ||
      c.path_dirs.size() > kMaxDeferredStrings) {
    return Error(ErrorCode::kInvalidArgument, "deferred command: too many strings");
  }
  Header h{kMagic, static_cast<uint32_t>(c.argv.size()), static_cast<uint32_t>(c.envp.size()),
           static_cast<uint32_t>(c.path_dirs.size()), c.hold_after_report ? kHoldAfterReport : 0};
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  AppendStrings(&out, c.argv);
  AppendStrings(&out, c.envp);
  AppendStrings(&out, c.path_dirs);
  out.append(c.workdir);
  out.push_back('\0');
  if (out.size() > kMaxDeferredCommandBytes) {
    return Error(
        ErrorCode::kInvalidArgument,
        "deferred command: larger than " + std::to_string(kMaxDeferredCommandBytes) + " bytes");
  }
  return out;
}

Status SendCommand(int socket_fd, const std::string& encoded, int stdin_fd, int stdout_fd,
                   int stderr_fd) {
  const int fds[3] = {stdin_fd, stdout_fd, stderr_fd};
  FdControlBuffer<3> control;
  iovec iov{const_cast<char*>(encoded.data()), encoded.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  AttachFds(&msg, &control, fds, 3);
  ssize_t n;
  do {
    n = ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(encoded.size())) {
    return Error::FromErrno(n < 0 ? errno : EMSGSIZE, "send the command to the jail");
  }
  return Ok();
}

bool ReceiveCommand(int socket_fd, CommandView* view, int fds[3]) {
  FdControlBuffer<3> control;
  iovec iov{g_buffer, kMaxDeferredCommandBytes};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ExpectFds(&msg, &control);
  ssize_t n;
  do {
    n = ::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return false;
  // Taken before any check, so that a refused message leaves no descriptor open here.
  const size_t received = TakeReceivedFds(&msg, fds, 3);
  if (n < static_cast<ssize_t>(sizeof(Header)) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
      received != 3) {
    for (size_t i = 0; i < received; ++i) ::close(fds[i]);
    return false;
  }
  Header h;
  std::memcpy(&h, g_buffer, sizeof h);
  if (h.magic != kMagic || h.argc == 0 || h.argc > kMaxDeferredStrings ||
      h.envc > kMaxDeferredStrings || h.pathc > kMaxDeferredStrings ||
      (h.flags & ~kHoldAfterReport) != 0) {
    return false;
  }
  size_t end = static_cast<size_t>(n);
  g_buffer[end] = '\0';
  size_t pos = sizeof h;
  const char* workdir[2];
  if (!TakeStrings(&pos, end, h.argc, g_argv) || !TakeStrings(&pos, end, h.envc, g_envp) ||
      !TakeStrings(&pos, end, h.pathc, g_path_dirs) || !TakeStrings(&pos, end, 1, workdir)) {
    return false;
  }
  view->argv = g_argv;
  view->envp = g_envp;
  view->path_dirs = g_path_dirs;
  view->workdir = workdir[0];
  view->hold_after_report = (h.flags & kHoldAfterReport) != 0;
  return true;
}

}  // namespace corral::jail
