// The jail's user namespace (rootless mode, JailPlan::user_ns).
//
// A child cloned with CLONE_NEWUSER starts with every capability in its new namespace but
// no ids there: until its uid_map and gid_map are written it cannot create a file or own
// a mount's contents. Only a process outside the namespace can write them, so:
//   parent (Spawn, after clone): WriteIdMaps(), then SignalIdMapsWritten() on setup_fd
//   child (first step after the lifeline): AwaitIdMaps() blocks until that byte arrives
// Parent half: ordinary C++. Child half: syscalls only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "jail/plan.h"

namespace corral::jail {

// Parent: writes /proc/<pid>/{setgroups,uid_map,gid_map}, or runs newuidmap/newgidmap.
Status WriteIdMaps(pid_t pid, const UserNamespacePlan& plan);
// Parent: tells the child its maps are in place.
Status SignalIdMapsWritten(int setup_fd);

// Child: waits for the parent's byte; false (reported) if it never comes.
bool AwaitIdMaps(int setup_fd);
// Child, once the bind sources are cloned (still with the caller's host ids, which may
// traverse directories the init's ids could not, e.g. root's 0700 /run/corral): takes the
// init's ids (user_ns.init_uid/gid). False (reported) on failure.
bool TakeInitIds(const JailPlan& plan, int setup_fd);

// A line "name-or-uid:start:count" of /etc/subuid or /etc/subgid.
struct SubordinateRange {
  uint32_t start = 0;
  uint32_t count = 0;
};
// Parent: the first range of `user_name` (or of decimal `id`) in the text of a subid file;
// malformed lines and empty ranges are skipped.
std::optional<SubordinateRange> FindSubordinateRange(const std::string& file_text,
                                                     const std::string& user_name, uint32_t id);

// "1000 4321 1\n..." as the kernel reads it.
std::string IdMapText(const std::vector<IdMapping>& map);

}  // namespace corral::jail
