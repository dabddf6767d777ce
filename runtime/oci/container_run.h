// RunContainer(): `mode: container` — one command of a JailSpec run by an OCI runtime
// (crun or runc, oci_runtime.h) from a bundle corral writes (oci_bundle.h), with the same
// RunOutcome as process mode (runtime/run/supervisor.h) plus the runtime's name.
//
// How it runs (the runtime is only ever asked to do what its CLI does):
//   1. the bundle in <runtime dir>/oci/<id> (id "corral-<pid>-<n>"); cgroupsPath
//      /<cgroups.parent>/<id>, where the runtime makes the cgroup and writes the limits;
//   2. a keeper process (PR_SET_CHILD_SUBREAPER) runs `RT run --detach --pid-file F
//      --bundle B ID` with the command's stdio; when the runtime has started the container
//      and exited, the container's init is re-parented to the keeper, which waits for it
//      and sends its wait status to corral. So the exit status is the kernel's, and the
//      container (and its cgroup) still exists when corral reads the cgroup's figures
//      (OOM kills: cgroup v1 counts them only in the victim's own cgroup, which the
//      runtime would remove at exit in `run` without --detach);
//   3. corral drains the output under the caps and enforces the wall clock: `RT kill ID
//      TERM`, after limits.kill_grace_seconds `RT kill ID KILL` (`--all` without a PID
//      namespace); SIGINT/SIGTERM/SIGHUP to corral kill it at once;
//   4. then `RT delete -f ID`, any cgroup directory the runtime left is removed, and the
//      bundle directory. On every path, timeout and signals included.
// Parent side. Errors are corral's own failures (no runtime, spec container mode cannot
// honour, bundle not written); a container that failed to start is an outcome with
// status setup_failed and the runtime's message.
#pragma once

#include "base/result.h"
#include "runtime/run/outcome.h"
#include "runtime/run/supervisor.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::oci {

Result<RunOutcome> RunContainer(const JailSpec& spec, const RunOptions& options);

// The cgroup directories (one per mounted hierarchy) that exist for `cgroups_path`, e.g.
// /sys/fs/cgroup/memory/corral/corral-12-0. For tests and cleanup.
std::vector<std::string> CgroupDirsOf(const std::string& cgroups_path);

}  // namespace corral::runtime::oci
