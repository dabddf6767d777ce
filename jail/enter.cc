#include "jail/enter.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>

#include "jail/child.h"
#include "jail/command.h"
#include "jail/hardening.h"
#include "jail/seccomp_eval.h"
#include "jail/setup_record.h"

namespace corral::jail {

namespace {

[[noreturn]] void RunEnterChild(const EnterRequest& r, int setup_fd, int status_fd,
                                bool early_seccomp) {
  KeepFds keep;
  for (int fd : {setup_fd, status_fd, r.stdin_fd, r.stdout_fd, r.stderr_fd, r.init_pidfd,
                 r.init_root_fd}) {
    keep.Add(fd);
  }
  for (int fd : r.cgroup_attach_fds) keep.Add(fd);
  CloseFdsExcept(keep);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kLifeline, errno, "PR_SET_PDEATHSIG");
    ::_exit(kSetupFailedExit);
  }
  if (r.child_subreaper && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kLifeline, errno, "PR_SET_CHILD_SUBREAPER");
    ::_exit(kSetupFailedExit);
  }
  if (!RedirectStdio(r.stdin_fd, r.stdout_fd, r.stderr_fd, setup_fd) ||
      !JoinCgroupThroughFds(r.cgroup_attach_fds, setup_fd)) {
    ::_exit(kSetupFailedExit);
  }
  unsigned flags = r.ns_flags & ~static_cast<unsigned>(CLONE_NEWPID);
  if (flags != 0 && ::setns(r.init_pidfd, static_cast<int>(flags)) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kMount, errno, "setns into the sandbox");
    ::_exit(kSetupFailedExit);
  }
  // setns gives us the mount namespace's root, which is the jail's root after pivot_root
  // but not after the chroot fallback (jail/mounts.cc). The init's own root is right in
  // both cases.
  if (::fchdir(r.init_root_fd) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kPivotRoot, errno, "chroot into the sandbox root");
    ::_exit(kSetupFailedExit);
  }
  if (!r.deferred_command) {
    HardenAndExec(*r.plan, setup_fd, nullptr);
    ::_exit(kSetupFailedExit);
  }
  // An exec slot: what the command does not decide is done before it arrives, off the
  // exec's path — the identity is the sandbox's. The slot then waits as the sandbox's
  // user without capabilities, and not dumpable (the uid change saw to that), so the
  // sandbox's own processes can neither ptrace it nor read its memory.
  if (!HardenIdentity(*r.plan, setup_fd)) ::_exit(kSetupFailedExit);
  // The filter too, where it allows everything the slot still does (the parent checked),
  // and Landlock before it, as in ExecHardened.
  if (early_seccomp) {
    if (!ApplyLandlock(r.plan->landlock, -1, setup_fd)) ::_exit(kSetupFailedExit);
    int err = InstallSeccomp(r.plan->seccomp);
    if (err != 0) {
      ReportSetupFailure(setup_fd, SetupStep::kSeccomp, err, "install seccomp filter");
      ::_exit(kSetupFailedExit);
    }
  }
  // "Ready": the cgroup join (an RCU grace period on v1) and the hardening are behind us.
  (void)::send(status_fd, "r", 1, MSG_NOSIGNAL);
  CommandView view;
  if (!AwaitCommand(status_fd, setup_fd, &view)) ::_exit(kSetupFailedExit);
  ::close(status_fd);
  ExecHardened(*r.plan, setup_fd, &view, early_seccomp);
  ::_exit(kSetupFailedExit);
}

}  // namespace

Result<JailProcess> SpawnInto(const EnterRequest& r) {
  int setup[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, setup) != 0) {
    return Error::FromErrno(errno, "socketpair");
  }
  UniqueFd setup_parent(setup[0]), setup_child(setup[1]);
  UniqueFd status_parent, status_child;
  if (r.deferred_command) {
    int status[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, status) != 0) {
      return Error::FromErrno(errno, "socketpair");
    }
    status_parent.Reset(status[0]);
    status_child.Reset(status[1]);
  }

  const bool early_seccomp =
      r.deferred_command && SeccompAllowsOutright(r.plan->seccomp, kSlotSyscallsAfterSeccomp);
  bool enter_pid_ns = (r.ns_flags & CLONE_NEWPID) != 0;
  UniqueFd own_pid_ns;
  if (enter_pid_ns) {
    own_pid_ns.Reset(::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
    if (!own_pid_ns) return Error::FromErrno(errno, "open /proc/self/ns/pid");
    if (::setns(r.init_pidfd, CLONE_NEWPID) != 0) {
      return Error::FromErrno(errno, "setns into the sandbox's PID namespace");
    }
  }
  clone_args args{};
  int pidfd = -1;
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (r.cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(r.cgroup_fd);
  }
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  int clone_errno = errno;
  if (pid == 0) {
    ::close(setup_parent.get());
    if (status_parent) ::close(status_parent.get());
    RunEnterChild(r, setup_child.get(), status_child.get(), early_seccomp);
  }
  // Back to our own namespace for any later children.
  if (enter_pid_ns && ::setns(own_pid_ns.get(), CLONE_NEWPID) != 0) {
    return Error::FromErrno(errno, "setns back to corral's PID namespace");
  }
  if (pid < 0) return Error::FromErrno(clone_errno, "clone into sandbox");
  return JailProcess(static_cast<pid_t>(pid), UniqueFd(pidfd), std::move(setup_parent),
                     std::move(status_parent));
}

}  // namespace corral::jail
