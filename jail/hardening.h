// The identity and hardening steps of a jail child, and the exec that ends them.
//
// Each function runs in the child after clone()/fork(), makes syscalls only, and on
// failure reports a SetupRecord on `report_fd` and returns false. They are shared by the
// two ways into a jail: a fresh one-shot jail (jail/child.cc) and, later, an exec into a
// persistent sandbox, which enters existing namespaces and then runs the same steps.
//
// Order matters and is fixed by HardenAndExec() = HardenIdentity() + ExecHardened():
//   signals reset, new session
//   -> securebits + bounding set (needs CAP_SETPCAP, so before the uid change)
//   -> ids (setgroups, setresgid, setresuid: clears permitted/effective caps)
//   -> capset to zero (covers uid 0 with unsafe.allow_root) and ambient clear
//   -> parent-death signal (the uid change cleared it) -> rlimits -> no_new_privs
//   then -> chdir -> mark fds CLOEXEC -> Landlock (jail/landlock.h) -> seccomp -> execve.
#pragma once

#include <vector>

#include "jail/plan.h"

namespace corral::jail {

// jail/entry_steps.cc: before hardening, in both entries.

// Fds a child keeps; fixed capacity, no allocation.
struct KeepFds {
  static constexpr int kCapacity = 256;
  int fds[kCapacity];
  int count = 0;
  bool overflow = false;
  void Add(int fd) {
    if (fd <= 2) return;  // stdio is replaced, never closed
    if (count == kCapacity) {
      overflow = true;
    } else {
      fds[count++] = fd;
    }
  }
};
// Closes every fd >= 3 not in `keep` (all of them kept if it overflowed). A parent with
// several threads may clone jails concurrently, so a child starts with copies of the other
// spawns' fds (their setup and status sockets, bind trees, pidfds); held by a child that
// waits (a prepared jail, a slow setup), another spawn's setup channel would never see EOF.
void CloseFdsExcept(KeepFds& keep);
bool RedirectStdio(int stdin_fd, int stdout_fd, int stderr_fd, int report_fd);
bool JoinCgroupThroughFds(const std::vector<int>& attach_fds, int report_fd);

// jail/caps.cc
bool LockSecurebitsAndDropBounding(int report_fd);
bool ClearCapabilities(int report_fd);
// The highest capability number the running kernel knows (one prctl per probe).
int LastCap();

// jail/ids.cc
bool SwitchIds(const JailPlan& plan, int report_fd);

// jail/rlimits.cc
bool ApplyRlimits(const JailPlan& plan, int report_fd);

// jail/net.cc
bool BringUpLoopback(int report_fd);

// jail/terminal.cc: the last identity step when plan.allocate_tty: a pty of the jail's
// devpts becomes stdio and controlling terminal; its master goes out on fd 0.
bool TakeTerminal(int report_fd);
// One SCM_RIGHTS message carrying `fd`, with `payload` as its data (a pty master on its
// way out: corral's own one byte, or the console's name that runc's receivers read).
bool SendFdWithPayload(int socket, int fd, const char* payload, size_t size);

// jail/exec.cc: resets signal state, then runs every step above and execs the command:
// the plan's own, or `command` (argv, envp, PATH, working directory) when a prepared jail
// received one (jail/command.h). Returns only on failure (after reporting); the caller
// then _exit()s.
struct CommandView;
void HardenAndExec(const JailPlan& plan, int report_fd, const CommandView* command = nullptr);
// Its two halves, for an exec slot (jail/enter.cc) that takes on the sandbox's identity
// before its command arrives: everything up to no_new_privs (false on failure, reported),
// and the command's own part, chdir to execve (returns only on failure), which skips the
// Landlock and seccomp steps if the caller already applied plan.landlock and plan.seccomp.
bool HardenIdentity(const JailPlan& plan, int report_fd);
void ExecHardened(const JailPlan& plan, int report_fd, const CommandView* command,
                  bool fences_installed);

// Restores default signal dispositions (including SIG_IGN inherited from the parent,
// which execve would keep) and unblocks every signal.
void ResetSignals();

}  // namespace corral::jail
