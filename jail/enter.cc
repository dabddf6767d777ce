#include "jail/enter.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

#include "base/scm_rights.h"
#include "jail/child.h"
#include "jail/command.h"
#include "jail/container.h"
#include "jail/hardening.h"
#include "jail/seccomp_eval.h"
#include "jail/setup_record.h"

namespace corral::jail {

namespace {

// Steps 1 of a child entering the sandbox: what it holds, its lifeline, its stdio. False
// (reported) on failure. The cgroup is joined by the process that becomes the command
// (JoinExecCgroup), never by the user-namespace intermediate.
bool PrepareEntrant(const EnterRequest& r, int setup_fd, int status_fd, int handoff_fd) {
  KeepFds keep;
  for (int fd : {setup_fd, status_fd, handoff_fd, r.stdin_fd, r.stdout_fd, r.stderr_fd,
                 r.init_pidfd, r.init_root_fd}) {
    keep.Add(fd);
  }
  for (int fd : r.cgroup_attach_fds) keep.Add(fd);
  keep.Add(r.plan->console_socket_fd);
  for (int fd = 3; fd < 3 + r.plan->preserve_fds; ++fd) keep.Add(fd);
  CloseFdsExcept(keep);
  // An OCI exec's process outlives the corral-runc that started it (runtime/oci).
  if (r.plan->die_with_parent && ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kLifeline, errno, "PR_SET_PDEATHSIG");
    return false;
  }
  return RedirectStdio(r.stdin_fd, r.stdout_fd, r.stderr_fd, setup_fd);
}

// The command's way into the exec's cgroup when it was not cloned into it: it writes "0"
// into each cgroup.procs fd the parent opened. The kernel checks such a write against the
// opener's credentials and cgroup namespace, so it works from inside the sandbox's
// namespaces too. A migration is not held to pids.max (only a fork is), so a command can
// still start in a sandbox whose processes fill its pids limit, as on the direct path.
bool JoinExecCgroup(const EnterRequest& r, int setup_fd) {
  return JoinCgroupThroughFds(r.cgroup_attach_fds, setup_fd);
}

// Step 3, inside the sandbox's namespaces: its root, then the hardening and the command.
[[noreturn]] void RunInSandbox(const EnterRequest& r, int setup_fd, int status_fd,
                               bool early_seccomp) {
  // The AIO shell's sessions: orphans of the command reparent to it, so a timeout finds
  // what the command double-forked (runtime/sessions/session_core.cc). Set here, in the process
  // that becomes the command, on both paths: the attribute is not inherited by a fork.
  if (r.child_subreaper && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kLifeline, errno, "PR_SET_CHILD_SUBREAPER");
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
    if (r.plan->use_container_identity) {
      ExecContainerCommand(*r.plan, setup_fd);
    } else {
      HardenAndExec(*r.plan, setup_fd, nullptr);
    }
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

// Without a user namespace: the parent already set our pid_for_children, so we were born
// in the sandbox's PID namespace; join the others.
[[noreturn]] void RunEnterChild(const EnterRequest& r, int setup_fd, int status_fd,
                                bool early_seccomp) {
  if (!PrepareEntrant(r, setup_fd, status_fd, -1)) ::_exit(kSetupFailedExit);
  if (r.cgroup_fd < 0 && !JoinExecCgroup(r, setup_fd)) ::_exit(kSetupFailedExit);
  unsigned flags = r.ns_flags & ~static_cast<unsigned>(CLONE_NEWPID);
  if (flags != 0 && ::setns(r.init_pidfd, static_cast<int>(flags)) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kEnter, errno, "setns into the sandbox");
    ::_exit(kSetupFailedExit);
  }
  RunInSandbox(r, setup_fd, status_fd, early_seccomp);
}

// The sandbox has a user namespace (rootless mode). Its other namespaces belong to it, so
// only a process inside it may join them, and the parent (threaded, and in the host's
// user namespace for good) cannot go in to set its pid_for_children. This intermediate
// does: one setns through the init's pidfd, which the kernel performs user namespace
// first (an unprivileged caller may join a user namespace it owns, and has every
// capability there once in), then the others and pid_for_children. It then clones the
// command with CLONE_PARENT, so that the command is the parent's own child as in the
// other path (waited for and reaped directly, its parent-death signal tied to the
// parent), hands its pid and pidfd over `handoff_fd`, and exits.
//
// The intermediate stays out of the exec's cgroup: were it in, its clone of the command
// would be a fork charged to that cgroup, refused (EAGAIN) once the sandbox's processes
// fill its pids limit, and it would count one process more while it lives. The command
// joins the cgroup itself, first thing (JoinExecCgroup).
[[noreturn]] void RunUserNsIntermediate(const EnterRequest& r, int setup_fd, int status_fd,
                                        int handoff_fd, bool early_seccomp) {
  if (!PrepareEntrant(r, setup_fd, status_fd, handoff_fd)) ::_exit(kSetupFailedExit);
  if (::setns(r.init_pidfd, static_cast<int>(r.ns_flags)) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kEnter, errno,
                       "setns into the sandbox's user namespace and the others");
    ::_exit(kSetupFailedExit);
  }
  clone_args args{};
  int pidfd = -1;
  args.flags = CLONE_PIDFD | CLONE_PARENT;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = 0;  // CLONE_PARENT: the kernel takes ours (SIGCHLD)
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    ::close(handoff_fd);
    // A new process: the parent-death signal is not inherited.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
      ReportSetupFailure(setup_fd, SetupStep::kLifeline, errno, "PR_SET_PDEATHSIG");
      ::_exit(kSetupFailedExit);
    }
    if (!JoinExecCgroup(r, setup_fd)) ::_exit(kSetupFailedExit);
    RunInSandbox(r, setup_fd, status_fd, early_seccomp);
  }
  if (pid < 0) {
    ReportSetupFailure(setup_fd, SetupStep::kEnter, errno, "clone into the sandbox");
    ::_exit(kSetupFailedExit);
  }
  int32_t child = static_cast<int32_t>(pid);
  iovec iov{&child, sizeof child};
  FdControlBuffer<1> control;
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  AttachFds(&msg, &control, &pidfd, 1);
  if (::sendmsg(handoff_fd, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof child)) {
    ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
    ReportSetupFailure(setup_fd, SetupStep::kEnter, errno, "hand the command's pidfd over");
    ::_exit(kSetupFailedExit);
  }
  ::_exit(0);
}

// Parent: the command's pid and pidfd from the intermediate; false if it sent none (it
// failed, and said why on the setup channel).
bool ReceiveHandoff(int handoff_fd, pid_t* pid, UniqueFd* pidfd) {
  int32_t child = -1;
  iovec iov{&child, sizeof child};
  FdControlBuffer<1> control;
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ExpectFds(&msg, &control);
  ssize_t n;
  do {
    n = ::recvmsg(handoff_fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return false;
  int fd = -1;
  if (TakeReceivedFds(&msg, &fd, 1) == 1) pidfd->Reset(fd);
  if (n != static_cast<ssize_t>(sizeof child) || !pidfd->valid()) return false;
  *pid = child;
  return true;
}

// The path through an intermediate (RunUserNsIntermediate). What comes back is the
// command; if the intermediate failed, the intermediate itself, whose exit status and
// setup record say why, as a command's would.
Result<JailProcess> SpawnThroughUserNamespace(const EnterRequest& r, UniqueFd setup_parent,
                                              UniqueFd setup_child, UniqueFd status_parent,
                                              UniqueFd status_child, bool early_seccomp) {
  int handoff[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, handoff) != 0) {
    return Error::FromErrno(errno, "socketpair");
  }
  UniqueFd handoff_parent(handoff[0]), handoff_child(handoff[1]);
  clone_args args{};
  int pidfd = -1;
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;  // in our own cgroup: see RunUserNsIntermediate
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    ::close(setup_parent.get());
    ::close(handoff_parent.get());
    if (status_parent) ::close(status_parent.get());
    RunUserNsIntermediate(r, setup_child.get(), status_child.get(), handoff_child.get(),
                          early_seccomp);
  }
  if (pid < 0) return Error::FromErrno(errno, "clone into sandbox");
  UniqueFd intermediate_pidfd(pidfd);
  handoff_child.Reset();  // so that the intermediate's exit is an EOF here
  pid_t command_pid = -1;
  UniqueFd command_pidfd;
  if (!ReceiveHandoff(handoff_parent.get(), &command_pid, &command_pidfd)) {
    return JailProcess(static_cast<pid_t>(pid), std::move(intermediate_pidfd),
                       std::move(setup_parent), std::move(status_parent));
  }
  // It exits right after the handoff; reaped here (it is not the command).
  siginfo_t info{};
  while (::waitid(P_PIDFD, static_cast<id_t>(intermediate_pidfd.get()), &info, WEXITED) != 0 &&
         errno == EINTR) {
  }
  return JailProcess(command_pid, std::move(command_pidfd), std::move(setup_parent),
                     std::move(status_parent));
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

  const bool early_seccomp = r.deferred_command && !r.late_hardening &&
                             SeccompAllowsOutright(r.plan->seccomp, kSlotSyscallsAfterSeccomp);
  if ((r.ns_flags & CLONE_NEWUSER) != 0) {
    return SpawnThroughUserNamespace(r, std::move(setup_parent), std::move(setup_child),
                                     std::move(status_parent), std::move(status_child),
                                     early_seccomp);
  }
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
