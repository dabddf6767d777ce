#include "jail/child.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "jail/command.h"
#include "jail/container.h"
#include "jail/hardening.h"
#include "jail/landlock.h"
#include "jail/mounts.h"
#include "jail/process_title.h"
#include "jail/setup_record.h"
#include "jail/syscalls.h"
#include "jail/user_ns.h"

namespace corral::jail {

namespace {

bool CheckLifeline(const JailPlan& plan, int setup_fd) {
  if (!plan.die_with_parent) return true;
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kLifeline, errno, "PR_SET_PDEATHSIG");
    return false;
  }
  // The parent may have died before the prctl took effect. It holds the other end of
  // setup_fd, so a hang-up there means it is gone.
  pollfd pfd{setup_fd, 0, 0};
  if (::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP) != 0) return false;
  return true;
}

bool JoinCgroup(const SpawnRequest& request, int setup_fd) {
  if (!JoinCgroupThroughFds(request.cgroup_attach_fds, setup_fd)) return false;
  // Only now, inside the jail's cgroup, so that the cgroup namespace's root is that cgroup
  // and /proc/self/cgroup shows "/" rather than the host's cgroup path.
  if (request.plan->new_cgroup_ns && ::unshare(CLONE_NEWCGROUP) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kCgroupNamespace, errno, "unshare(CLONE_NEWCGROUP)");
    return false;
  }
  return true;
}

bool SetUpUtsAndNet(const JailPlan& plan, int setup_fd) {
  if (!plan.hostname.empty() && ::sethostname(plan.hostname.c_str(), plan.hostname.size()) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kHostname, errno, "sethostname");
    return false;
  }
  // With a user namespace the clone was made inside it already (jail/spawn.cc).
  if (plan.net_ns_fd >= 0 && !plan.user_ns.enabled && ::setns(plan.net_ns_fd, CLONE_NEWNET) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kNetwork, errno, "setns(network namespace)");
    return false;
  }
  return !plan.loopback_up || BringUpLoopback(setup_fd);
}

// The init keeps uid 0 (so the command, uid 1000, can neither signal nor ptrace it) but
// loses every capability and gets no_new_privs, the same Landlock rules (plus the
// corral-init program it may still exec, `init_exe_fd`, which lies outside the jail's
// mounts) and the same seccomp filter.
//
// In a user namespace with a single mapped id the init has the command's uid, so only
// being non-dumpable keeps the command out of its /proc/1/mem, environ and fds (ptrace
// itself is refused by seccomp).
bool HardenInit(const JailPlan& plan, int setup_fd, int init_exe_fd) {
  if (!LockSecurebitsAndDropBounding(setup_fd) || !ClearCapabilities(setup_fd)) return false;
  if (plan.user_ns.enabled && ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kInit, errno, "init not dumpable");
    return false;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kInit, errno, "init no_new_privs");
    return false;
  }
  if (!ApplyLandlock(plan.landlock, init_exe_fd, setup_fd)) return false;
  int err = InstallSeccomp(plan.seccomp);
  if (err != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kInit, err, "init seccomp");
    return false;
  }
  return true;
}

void SendReport(int status_fd, int wait_status) {
  InitReport report{wait_status, 0};
  (void)::send(status_fd, &report, sizeof report, MSG_NOSIGNAL);
}

// PID 1. One-shot: waits for the command, reports its status, exits (the kernel then
// SIGKILLs everything left in the namespace: daemons, double-forked grandchildren).
// Persistent (command = -1): reaps forever; an exec's processes are reparented to us when
// the exec's parent (the corral CLI) goes away.
// Persistent mode with a corral-init program: replace ourselves with it. Every fd is
// CLOEXEC first, so a successful exec closes the setup channel (the parent's "running").
[[noreturn]] void ExecInitProgram(int init_exe_fd, int setup_fd) {
  sys::CloseRange(0, ~0U, CLOSE_RANGE_CLOEXEC);
  char name[] = "corral-init";
  char* argv[] = {name, nullptr};
  char* envp[] = {nullptr};
  ::syscall(SYS_execveat, init_exe_fd, "", argv, envp, AT_EMPTY_PATH);
  ReportSetupFailure(setup_fd, SetupStep::kInit, errno, "exec corral-init");
  ::_exit(kSetupFailedExit);
}

// One-shot init with hold_after_report: the report is out; the parent SIGKILLs us next.
// EOF on the status socket (the parent went away without doing so) ends the wait too.
[[noreturn]] void AwaitKill(int status_fd) {
  char byte;
  while (::recv(status_fd, &byte, 1, 0) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

[[noreturn]] void RunInit(const JailPlan& plan, pid_t command, int setup_fd, int status_fd,
                          int init_exe_fd, bool hold_after_report) {
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, nullptr);
  if (!HardenInit(plan, setup_fd, init_exe_fd)) {
    if (command > 0) ::kill(command, SIGKILL);
    ::_exit(kSetupFailedExit);
  }
  if (command < 0 && init_exe_fd >= 0) ExecInitProgram(init_exe_fd, setup_fd);
  // Keep only status_fd: holding the command's stdout pipe or the setup channel open
  // would keep the parent from seeing EOF on them.
  sys::CloseRange(0, static_cast<unsigned>(status_fd) - 1, 0);
  sys::CloseRange(static_cast<unsigned>(status_fd) + 1, ~0U, 0);
  for (;;) {
    int status = 0;
    pid_t pid = ::wait4(-1, &status, 0, nullptr);
    if (command > 0 && pid == command) {
      SendReport(status_fd, status);
      if (plan.init_mode == InitMode::kOneShot) {
        if (hold_after_report) AwaitKill(status_fd);
        ::_exit(0);
      }
    }
    if (pid < 0 && errno == ECHILD) {
      if (plan.init_mode == InitMode::kOneShot) ::_exit(0);
      // Persistent and childless: sleep until an orphan is reparented to us and exits.
      siginfo_t info;
      sigset_t chld;
      sigemptyset(&chld);
      sigaddset(&chld, SIGCHLD);
      ::sigwaitinfo(&chld, &info);
    }
  }
}

// The command's start: its own process sharing the init's memory until it execs
// (CLONE_VM | CLONE_VFORK, as posix_spawn does), so that no page table of the init — a
// copy of the whole parent — is copied only to be thrown away by the execve, and so that
// the command runs at once on this CPU instead of waiting for another to wake up (a
// quarter of a millisecond on a VM). The init is suspended until the execve and hardens
// itself after it. The two share no mutable state: the command runs on its own stack,
// makes syscalls only and writes nothing the init reads; its fd table, credentials and
// signal state are its own (no CLONE_FILES, no CLONE_SIGHAND).
struct CommandStart {
  const JailPlan* plan;
  int setup_fd;
  int status_fd;
  const CommandView* command;
};

int CommandMain(void* arg) {
  const auto* start = static_cast<const CommandStart*>(arg);
  ::close(start->status_fd);  // the command's own fd table: the init keeps its copy
  HardenAndExec(*start->plan, start->setup_fd, start->command);
  // The exec failed (reported). Returning ends the process: clone(2)'s wrapper makes the
  // exit syscall with this value. No call to a noreturn function such as _exit here: on
  // this stack, which is not the thread's, a sanitizer build's no-return hook would print
  // a warning into the command's stderr.
  return kSetupFailedExit;
}

alignas(64) char g_command_stack[256 * 1024];

// `start` must outlive the command's exec: the caller's frame never returns (RunInit).
pid_t StartCommand(const CommandStart& start) {
  return ::clone(CommandMain, g_command_stack + sizeof g_command_stack,
                 CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<CommandStart*>(&start));
}

}  // namespace

bool AwaitCommand(int status_fd, int setup_fd, CommandView* view) {
  int fds[3];
  if (!ReceiveCommand(status_fd, view, fds)) return false;
  bool ok = RedirectStdio(fds[0], fds[1], fds[2], setup_fd);
  for (int fd : fds) {
    if (fd > 2) ::close(fd);
  }
  return ok;
}

// Every fd a fresh jail's child uses; the rest were inherited from whatever else the
// parent had open (see CloseFdsExcept).
void CloseUnusedFds(const SpawnRequest& request, int setup_fd, int status_fd) {
  KeepFds keep;
  for (int fd : {setup_fd, status_fd, request.stdin_fd, request.stdout_fd, request.stderr_fd,
                 request.init_exe_fd, request.plan->net_ns_fd}) {
    keep.Add(fd);
  }
  for (int fd : request.cgroup_attach_fds) keep.Add(fd);
  for (int fd : {request.plan->console_socket_fd, request.plan->start_gate_fd}) keep.Add(fd);
  for (const auto& ns : request.plan->join_namespaces) keep.Add(ns.first);
  for (int fd = 3; fd < 3 + request.plan->preserve_fds; ++fd) keep.Add(fd);
  for (const MountOp& op : request.plan->mounts) keep.Add(op.source_fd);
  CloseFdsExcept(keep);
}

namespace {

// An OCI container's child (InitMode::kExecDirect, jail/container.h): no init of corral's;
// it builds the container, waits at the start gate if there is one, and becomes the
// container's process. Nothing is reported on status_fd.
[[noreturn]] void RunContainerChild(const SpawnRequest& request, int setup_fd, int status_fd) {
  const JailPlan& plan = *request.plan;
  ::close(status_fd);
  if (!CheckLifeline(plan, setup_fd) ||
      !RedirectStdio(request.stdin_fd, request.stdout_fd, request.stderr_fd, setup_fd) ||
      !JoinCgroup(request, setup_fd) || !JoinNamespaces(plan, setup_fd) ||
      !WriteSysctls(plan, setup_fd) || !BuildRoot(plan, setup_fd) ||
      !SetUpUtsAndNet(plan, setup_fd) || !TakeConsole(plan, setup_fd)) {
    ::_exit(kSetupFailedExit);
  }
  const int report_fd = AwaitStartGate(plan, setup_fd);
  bool seccomp_installed = false;
  if (report_fd >= 0 && HardenContainerIdentity(plan, report_fd, &seccomp_installed)) {
    ExecHardened(plan, report_fd, nullptr, seccomp_installed);
  }
  ::_exit(kSetupFailedExit);
}

}  // namespace

void RunJailChild(const SpawnRequest& request, int setup_fd, int status_fd) {
  const JailPlan& plan = *request.plan;
  // First thing: the command must never see the parent's command line (host paths) in
  // /proc/1/cmdline, and `ps` on the host should show what this is from the start.
  SetProcessTitle("corral-init");
  CloseUnusedFds(request, setup_fd, status_fd);
  if (plan.init_mode == InitMode::kExecDirect) RunContainerChild(request, setup_fd, status_fd);
  if (!CheckLifeline(plan, setup_fd) || (plan.user_ns.enabled && !AwaitIdMaps(setup_fd)) ||
      !RedirectStdio(request.stdin_fd, request.stdout_fd, request.stderr_fd, setup_fd) ||
      !JoinCgroup(request, setup_fd) || !BuildRoot(plan, setup_fd) ||
      !SetUpUtsAndNet(plan, setup_fd)) {
    ::_exit(kSetupFailedExit);
  }
  if (plan.init_mode == InitMode::kPersistent) {
    RunInit(plan, -1, setup_fd, status_fd, request.init_exe_fd, false);
  }
  CommandView view;
  const CommandView* command = nullptr;
  if (plan.deferred_command) {
    if (!AwaitCommand(status_fd, setup_fd, &view)) ::_exit(kSetupFailedExit);
    command = &view;
  }
  const CommandStart start{&plan, setup_fd, status_fd, command};
  pid_t child = StartCommand(start);
  if (child < 0) {
    ReportSetupFailure(setup_fd, SetupStep::kFork, errno, "fork command");
    ::_exit(kSetupFailedExit);
  }
  RunInit(plan, child, setup_fd, status_fd, -1, command != nullptr && command->hold_after_report);
}

}  // namespace corral::jail
