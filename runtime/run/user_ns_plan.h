// Rootless mode: when a jail gets a user namespace, and how its ids map to the host.
//
// The command runs as spec.uid/spec.gid (1000 by default) inside. For a non-root caller
// that id maps to the caller's own uid/gid outside (as root, to the same host ids as in
// root mode), so what the command writes in a bind-mounted directory
// belongs to the caller, and the caller (owner of the namespace) can signal and reap the
// jail. With a subordinate range for the caller in /etc/subuid and /etc/subgid and
// Debian's uidmap helpers (newuidmap/newgidmap), the rest of 0..range-1 maps onto the
// range, so the jail's init is a uid 0 distinct from the command; without one, the
// command's id is the only one mapped (setgroups is then off in the namespace).
// Parent side; reads /etc/subuid, /etc/subgid, /etc/passwd (the caller's name).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "jail/plan.h"
#include "jail/user_ns.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// As non-root always; as root when the spec asks (rootless: true / --rootless).
bool RunsRootless(const JailSpec& spec);

using jail::FindSubordinateRange;  // jail/user_ns.h
using jail::SubordinateRange;

// `inside` -> `caller`, and around it (when `range` is given) 0..inside-1 and then
// inside+1.. onto the range, as far as it goes.
std::vector<jail::IdMapping> MapAround(uint32_t inside, uint32_t caller,
                                       const std::optional<SubordinateRange>& range);

// The user namespace of a rootless jail.
Result<jail::UserNamespacePlan> PlanUserNamespace(const JailSpec& spec);

// The host ids that spec.uid/spec.gid are: the caller's own for a non-root caller, else
// themselves.
uid_t HostUidOf(const JailSpec& spec);
gid_t HostGidOf(const JailSpec& spec);

}  // namespace corral::runtime
