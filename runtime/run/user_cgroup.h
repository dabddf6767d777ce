// Limits without root: where a non-root caller's jails get their cgroups.
//
// Only a cgroup v2 subtree delegated to the caller will do: its directory and its
// cgroup.procs and cgroup.subtree_control owned by the caller, with memory, cpu and pids
// passed down to it (systemd: `systemd-run --user --scope -p Delegate=yes ...`, or a user
// service with Delegate=yes). corral takes the cgroup it runs in, if that is one: it moves
// itself into a leaf, `<cgroup>/corral-supervisor` (cgroup v2 lets only an empty cgroup
// hand controllers down), and makes the jails' cgroups under `<cgroup>/corral`. Anywhere
// else — cgroup v1 or hybrid hosts, whose controllers only root can write, or a cgroup not
// delegated — the limits cannot be enforced, and corral refuses to run unless
// unsafe.allow_missing_limits (then rlimits only, the skipped limits named).
// Parent side.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.h"
#include "cgroups/cgroup.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// The cgroup parent a non-root caller's jails use: `<delegated>/corral` after moving this
// process into `<delegated>/corral-supervisor`; or kUnsupported saying why there is none.
Result<std::string> PrepareUserCgroupParent(const JailSpec& spec);

// The refusal (with the ways out: README.md "Running without root" quotes it), and the
// warning every run carries under unsafe.allow_missing_limits, for reason `why`.
std::string MissingLimitsRefusal(const JailSpec& spec, const std::string& why);
std::string MissingLimitsWarning(const JailSpec& spec, const std::string& why);

// "limits.memory (512 MiB), limits.cpus (1) and limits.pids (256)": what goes unenforced.
std::string SkippedLimits(const LimitsSpec& limits);

}  // namespace corral::runtime
