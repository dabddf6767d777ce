// Mounts changed inside a running sandbox: what a warm sandbox's claim does to bind the
// thread's directories (runtime/pool/warm_claim.h), and what a snapshot does to put a
// new upper layer under the workspace (runtime/snapshots/). The mounts are prepared in
// corral's own (the host's) mount namespace, as detached trees with the attributes a cold
// create gives them; a forked child then enters the sandbox's mount namespace and root and
// puts each at its place. The child of a possibly threaded parent makes syscalls only.
// Parent side, root only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime {

// One mount to make inside the sandbox: over a mount that is there (replaced), or at a new
// mount point.
struct MountSwitch {
  std::string host_path;  // for messages
  std::string jail_path;
  UniqueFd tree;         // detached, configured (jail::PrepareBindTree, PrepareOverlayTree)
  bool replace = false;  // over the mount at jail_path, which is detached first
  // With `replace`: the replaced mount is made read-only first, so that nothing writes
  // through it any more (a process may keep a directory of it open). Refused (EBUSY) while
  // a file on it is open for writing; the switch then changes nothing.
  bool seal_replaced = false;
  bool is_dir = true;  // the mount point is a directory, else a file
  // A new mount point's path and its parents, shortest first ("/mnt", "/mnt/x"), made in
  // the parent: the child allocates nothing.
  std::vector<std::string> prefixes;
};

// "/a/b/c" -> {"/a", "/a/b", "/a/b/c"}: a new mount point's MountSwitch::prefixes.
std::vector<std::string> MountPointPrefixes(const std::string& path);

// The sandbox whose mounts change: its init, checked against its start time once opened.
struct SwitchTarget {
  std::string what;  // "warm sandbox w1", for messages
  pid_t init_pid = 0;
  uint64_t init_start_ticks = 0;
};

// Puts every mount at its place in the sandbox, in order. A mount that
// cannot be put leaves the mounts before it switched; a replaced mount whose successor
// cannot be moved in is put back (read-write again if it was sealed). Errors name the
// mount, the step and errno; a seal refused because a file is open for writing is
// kFailedPrecondition.
Status SwitchMountsInSandbox(const SwitchTarget& target, std::vector<MountSwitch>& mounts);

}  // namespace corral::runtime
