// SpawnInto(): start a command inside the namespaces of a running persistent sandbox.
//
// The parent points its pid_for_children at the sandbox's PID namespace (setns on the
// init's pidfd), clones the child — which is therefore born inside that namespace and is
// still the parent's own child, so it can be waited for directly — and switches back. The
// child joins its cgroup, setns()es into the sandbox's mount, UTS, IPC, network and cgroup
// namespaces through the same pidfd (the mount namespace brings the sandbox's root with
// it), then runs the same hardening pipeline as a fresh jail (jail/hardening.h) and execs.
// The cost over a bare fork+exec is one setns in the parent and one in the child.
//
// A sandbox with a user namespace of its own (rootless mode: CLONE_NEWUSER in ns_flags)
// owns its other namespaces, so only a process inside it may join them, and the parent
// cannot set its pid_for_children there (it would have to enter the user namespace for
// good, and it has threads). An intermediate child does it instead: one setns through the
// pidfd, which the kernel performs user namespace first (an unprivileged caller may join
// a user namespace it owns), then the others; it clones the command with CLONE_PARENT (so
// the command is still the parent's own child), hands its pid and pidfd back, and exits.
// One more clone than the other path. The intermediate stays in the caller's cgroup; the
// command joins the exec's through cgroup_attach_fds.
#pragma once

#include <sys/syscall.h>

#include <initializer_list>
#include <vector>

#include "base/result.h"
#include "jail/plan.h"
#include "jail/spawn.h"

namespace corral::jail {

// What an exec slot calls between an early seccomp install and its command's execve:
// the ready byte (send), the command (recvmsg), its stdio (dup2, fcntl, close), chdir,
// close_range, execve, and on failure the setup record (send, write) and _exit. Keep in
// step with RunEnterChild, ReceiveCommand, RedirectStdio, ExecHardened and
// ReportSetupFailure.
inline constexpr std::initializer_list<int> kSlotSyscallsAfterSeccomp = {
    SYS_sendto,      SYS_recvmsg, SYS_dup2,  SYS_fcntl,      SYS_close, SYS_chdir,
    SYS_close_range, SYS_execve,  SYS_write, SYS_exit_group, SYS_exit};

struct EnterRequest {
  const JailPlan* plan = nullptr;  // identity, argv/envp, rlimits, seccomp; no mounts
  int init_pidfd = -1;             // pidfd of the sandbox's init
  int init_root_fd = -1;           // O_PATH fd of /proc/<init>/root: the jail's root
  unsigned ns_flags = 0;           // CLONE_NEW* of the sandbox, CLONE_NEWPID included
  int stdin_fd = 0;
  int stdout_fd = 1;
  int stderr_fd = 2;
  // The exec's cgroup. v2: cgroup_fd for clone3(CLONE_INTO_CGROUP), used where the
  // command is our direct clone. cgroup_attach_fds (its cgroup.procs, one per v1
  // hierarchy): the command writes "0" into each when it was not cloned into cgroup_fd —
  // always on v1, and on the user-namespace path, so set both on v2.
  int cgroup_fd = -1;
  std::vector<int> cgroup_attach_fds;
  // An exec slot: the child joins the cgroup and the namespaces, takes on the sandbox's
  // identity (HardenIdentity; and the seccomp filter if it allows every call the slot
  // still makes), sends one byte on the status channel, then waits there for its command,
  // environment, working directory and stdio (JailProcess::SendCommand) before the rest
  // of the hardening and the exec. The stdio fds above are only what it holds while it
  // waits.
  bool deferred_command = false;
  // A deferred command's Landlock rules and seccomp filter are applied only once the
  // command has come, never while it waits. For a sandbox whose mounts may still change
  // (a warm sandbox, claimed later: runtime/pool/warm_claim.h): Landlock rules hold
  // the inodes their paths named when they were made, so rules made before a directory
  // was mounted over would deny the directory mounted there.
  bool late_hardening = false;
  // PR_SET_CHILD_SUBREAPER on the command (kept across its execve): processes it leaves
  // orphaned (a double fork, setsid + &) are reparented to it instead of to the sandbox's
  // init, so they stay in its tree. The AIO shell sessions ask for it
  // (runtime/sessions/proc_tree.h).
  bool child_subreaper = false;
};

// The returned JailProcess is the command itself (no init between): Reap() gives the
// command's own wait status. It has a status channel only for a deferred command.
Result<JailProcess> SpawnInto(const EnterRequest& request);

}  // namespace corral::jail
