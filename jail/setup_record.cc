#include "jail/setup_record.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "jail/child_text.h"

namespace corral::jail {

const char* StepName(SetupStep step) {
  switch (step) {
    case SetupStep::kLifeline:
      return "lifeline";
    case SetupStep::kStdio:
      return "stdio";
    case SetupStep::kCgroupAttach:
      return "cgroup_attach";
    case SetupStep::kCgroupNamespace:
      return "cgroup_namespace";
    case SetupStep::kMount:
      return "mount";
    case SetupStep::kPivotRoot:
      return "pivot_root";
    case SetupStep::kHostname:
      return "hostname";
    case SetupStep::kNetwork:
      return "network";
    case SetupStep::kFork:
      return "fork";
    case SetupStep::kIds:
      return "ids";
    case SetupStep::kCapabilities:
      return "capabilities";
    case SetupStep::kRlimits:
      return "rlimits";
    case SetupStep::kNoNewPrivs:
      return "no_new_privs";
    case SetupStep::kCloseFds:
      return "close_fds";
    case SetupStep::kChdir:
      return "chdir";
    case SetupStep::kSeccomp:
      return "seccomp";
    case SetupStep::kExecve:
      return "execve";
    case SetupStep::kInit:
      return "init";
    case SetupStep::kLandlock:
      return "landlock";
    case SetupStep::kUserNamespace:
      return "user_namespace";
    case SetupStep::kEnter:
      return "enter";
  }
  return "unknown";
}

void ReportSetupFailure(int fd, SetupStep step, int err, const char* what) {
  SetupRecord record;
  std::memset(&record, 0, sizeof record);
  record.step = static_cast<uint32_t>(step);
  record.err = err;
  ChildText(record.message, sizeof record.message).Add(what);
  // MSG_NOSIGNAL: a parent that is already gone must not kill us with SIGPIPE before
  // we _exit with a meaningful status.
  (void)::send(fd, &record, sizeof record, MSG_NOSIGNAL);
}

std::string SetupFailure::ToString() const {
  return "setup failed at " + message + ": " + std::strerror(err);
}

Result<std::optional<SetupFailure>> ReadSetupResult(int fd, int timeout_ms) {
  pollfd pfd{fd, POLLIN, 0};
  for (;;) {
    int n = ::poll(&pfd, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "waiting for jail setup");
    if (n == 0) {
      return Error(ErrorCode::kSetupFailed, "jail setup did not finish in time");
    }
    break;
  }
  SetupRecord record;
  ssize_t got;
  do {
    got = ::recv(fd, &record, sizeof record, 0);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return std::optional<SetupFailure>();
  if (got < 0) return Error::FromErrno(errno, "reading jail setup result");
  if (static_cast<size_t>(got) != sizeof record) {
    return Error(ErrorCode::kInternal, "malformed setup record from jail child");
  }
  record.message[sizeof record.message - 1] = '\0';
  return std::optional<SetupFailure>(
      SetupFailure{static_cast<SetupStep>(record.step), record.err, record.message});
}

const char* ErrnoName(int err) {
  // strerrorname_np is glibc >= 2.32; Debian 12 has 2.36.
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "EUNKNOWN";
}

}  // namespace corral::jail
