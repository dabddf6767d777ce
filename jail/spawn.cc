#include "jail/spawn.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "jail/child.h"
#include "jail/command.h"
#include "jail/syscalls.h"
#include "jail/user_ns.h"

namespace corral::jail {

JailProcess::JailProcess(pid_t pid, UniqueFd pidfd, UniqueFd setup_fd, UniqueFd status_fd)
    : pid_(pid),
      pidfd_(std::move(pidfd)),
      setup_fd_(std::move(setup_fd)),
      status_fd_(std::move(status_fd)) {}

JailProcess::~JailProcess() {
  if (pid_ > 0) {
    Kill(SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

JailProcess::JailProcess(JailProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      setup_fd_(std::move(other.setup_fd_)),
      status_fd_(std::move(other.status_fd_)) {}

JailProcess& JailProcess::operator=(JailProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) {
      Kill(SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    setup_fd_ = std::move(other.setup_fd_);
    status_fd_ = std::move(other.status_fd_);
  }
  return *this;
}

Result<std::optional<SetupFailure>> JailProcess::AwaitSetup(int timeout_ms) {
  auto result = ReadSetupResult(setup_fd_.get(), timeout_ms);
  setup_fd_.Reset();
  return result;
}

Status JailProcess::SendCommand(const std::string& encoded, int stdin_fd, int stdout_fd,
                                int stderr_fd) {
  return jail::SendCommand(status_fd_.get(), encoded, stdin_fd, stdout_fd, stderr_fd);
}

std::optional<InitReport> JailProcess::TakeReport() {
  InitReport report;
  ssize_t n = ::recv(status_fd_.get(), &report, sizeof report, MSG_DONTWAIT);
  if (n != static_cast<ssize_t>(sizeof report)) return std::nullopt;
  return report;
}

pid_t JailProcess::Release() {
  pidfd_.Reset();
  setup_fd_.Reset();
  status_fd_.Reset();
  return std::exchange(pid_, -1);
}

void JailProcess::Kill(int sig) {
  if (pid_ <= 0) return;
  // The pidfd cannot hit a recycled pid; fall back to kill() only without one.
  if (pidfd_.valid()) {
    sys::PidfdSendSignal(pidfd_.get(), sig);
  } else {
    ::kill(pid_, sig);
  }
}

Result<int> JailProcess::Reap(struct rusage* usage) {
  if (pid_ <= 0) return Error(ErrorCode::kInternal, "jail init already reaped");
  int status = 0;
  pid_t got;
  do {
    got = ::wait4(pid_, &status, 0, usage);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return Error::FromErrno(errno, "wait4 jail init");
  pid_ = -1;
  return status;
}

namespace {

// clone3 when the kernel has it (CLONE_INTO_CGROUP needs it), else clone(2). Both are
// used fork-style: no new stack, the child continues on a copy of ours.
pid_t CloneJail(const SpawnRequest& request, int* pidfd) {
  const uint64_t flags =
      request.plan->clone_flags | CLONE_PIDFD | (request.clone_parent ? CLONE_PARENT : 0);
  clone_args args{};
  args.flags = flags;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  // With CLONE_PARENT the exit signal is our parent's choice (the kernel takes the one we
  // were created with, SIGCHLD) and clone3 refuses one here.
  args.exit_signal = request.clone_parent ? 0 : SIGCHLD;
  if (request.cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(request.cgroup_fd);
  }
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid >= 0 || errno != ENOSYS || request.cgroup_fd >= 0) return static_cast<pid_t>(pid);
  // Legacy clone: CLONE_PIDFD stores the fd through the parent_tid argument.
  return static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, nullptr, pidfd, nullptr, 0));
}

}  // namespace

Result<JailProcess> Spawn(const SpawnRequest& request) {
  int setup[2];
  int status[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, setup) != 0) {
    return Error::FromErrno(errno, "socketpair");
  }
  UniqueFd setup_parent(setup[0]), setup_child(setup[1]);
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, status) != 0) {
    return Error::FromErrno(errno, "socketpair");
  }
  UniqueFd status_parent(status[0]), status_child(status[1]);

  int pidfd = -1;
  int clone_errno = 0;
  auto clone_and_run = [&]() -> pid_t {
    pid_t child = CloneJail(request, &pidfd);
    clone_errno = errno;
    if (child == 0) {
      ::close(setup_parent.get());
      ::close(status_parent.get());
      RunJailChild(request, setup_child.get(), status_child.get());
    }
    return child;
  };
  pid_t pid = -1;
  int back_errno = 0;
  if (request.plan->user_ns.enabled && request.plan->net_ns_fd >= 0) {
    // A child in a user namespace of its own has no CAP_SYS_ADMIN over a network namespace
    // the host's user namespace owns (the proxy's: runtime/net/netproxy_launch.h), so it
    // cannot setns() there. It is cloned in it instead: this thread joins it for the clone
    // (a network namespace is per thread, and a clone without CLONE_NEWNET starts in its
    // caller's) and goes back at once, as SpawnInto does with its PID namespace. Not from a
    // helper thread: the child's parent-death signal follows the thread that cloned it,
    // and would kill the jail when that thread ended.
    UniqueFd own_net(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!own_net) return Error::FromErrno(errno, "open /proc/thread-self/ns/net");
    if (::setns(request.plan->net_ns_fd, CLONE_NEWNET) != 0) {
      return Error::FromErrno(errno, "setns into the jail's network namespace");
    }
    pid = clone_and_run();
    if (::setns(own_net.get(), CLONE_NEWNET) != 0) back_errno = errno;
  } else {
    pid = clone_and_run();
  }
  if (pid < 0) return Error::FromErrno(clone_errno, "clone jail");
  // On failure below `jail` is destroyed: the waiting child is killed and reaped.
  JailProcess jail(pid, UniqueFd(pidfd), std::move(setup_parent), std::move(status_parent));
  if (back_errno != 0) {
    return Error::FromErrno(back_errno, "setns back to corral's network namespace");
  }
  if (request.plan->user_ns.enabled) {
    Status mapped = WriteIdMaps(pid, request.plan->user_ns);
    if (!mapped) return mapped.error().WithContext("user namespace id maps");
    RETURN_IF_ERROR(SignalIdMapsWritten(jail.setup_fd()));
  }
  return jail;
}

}  // namespace corral::jail
