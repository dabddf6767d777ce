// The steps an OCI container's child takes (JailPlan::init_mode kExecDirect, driven by
// corral-runc: runtime/oci/runc_container.h) that corral's own jails do not.
//
// Child side: syscalls only, no allocation; a failure reports a SetupRecord on `report_fd`
// and returns false. The order in jail/child.cc, RunContainerChild:
//   cgroup -> JoinNamespaces -> WriteSysctls -> BuildRoot (in-root mounts:
//   jail/container_mounts.cc) -> hostname -> TakeConsole -> AwaitStartGate
//   -> HardenContainerIdentity -> ExecHardened
#pragma once

#include "jail/plan.h"

namespace corral::jail {

// setns into each of plan.join_namespaces, in order.
bool JoinNamespaces(const JailPlan& plan, int report_fd);

// Writes plan.sysctls (namespaced ones: they land in the jail's own namespaces).
bool WriteSysctls(const JailPlan& plan, int report_fd);

// With plan.console_socket_fd: a new session, a pty of the container's devpts (after
// pivot_root) as stdio and controlling terminal, its master sent on the console socket
// (one SCM_RIGHTS message, as runc sends it), the socket closed.
bool TakeConsole(const JailPlan& plan, int report_fd);

// With plan.start_gate_fd: closes `setup_fd` (the creator sees success), waits for one
// connection on the gate and returns it, to be the setup channel from now on (-1 if
// accept failed: nobody is left to tell). Without a gate: returns setup_fd.
int AwaitStartGate(const JailPlan& plan, int setup_fd);

// HardenIdentity()'s counterpart for plan.container_identity: signals reset, a new
// session, rlimits (raised too: still privileged), the seccomp filter first when
// no_new_privs is off (installing it later would need CAP_SYS_ADMIN), the bounding set,
// groups and ids keeping the capabilities asked for, the capability sets, the ambient
// set, no_new_privs if asked, the umask. Sets *seccomp_installed.
bool HardenContainerIdentity(const JailPlan& plan, int report_fd, bool* seccomp_installed);

// An OCI exec's process, inside the container's namespaces (jail/enter.h, plan with
// use_container_identity): TakeConsole, HardenContainerIdentity, ExecHardened. Returns
// only on failure (reported).
void ExecContainerCommand(const JailPlan& plan, int report_fd);

// jail/container_mounts.cc: runs one in-root op (MountOp::in_root) under `root_fd`, an fd
// of the staging directory. False with errno set on failure.
bool RunInRootOp(const MountOp& op, int source_fd, int root_fd);

}  // namespace corral::jail
