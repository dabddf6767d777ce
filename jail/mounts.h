// The jail's root filesystem.
//
// Parent half: PrepareBindTree() turns a host path into a detached, fully configured mount
// tree (open_tree + mount_setattr), owned by the plan. Doing this in the parent matters
// twice: the host path is resolved once, before clone, so it cannot be swapped later; and
// open_tree(OPEN_TREE_CLONE) of a host mount only works from the host's mount namespace.
//
// Child half: BuildRoot() makes the mount namespace private, executes the plan's MountOps
// under the staging directory, pivots into it and detaches the old root. Syscalls only.
#pragma once

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "jail/plan.h"

namespace corral::jail {

// Parent: a detached recursive copy of `host_path`, made nosuid+nodev, read-only if asked,
// and private (so nothing mounted beneath it in the jail can propagate back to the host).
// Symlinks in `host_path` itself are not followed.
Result<UniqueFd> PrepareBindTree(const std::string& host_path, bool read_only);

// Parent: a detached copy of `host_path` (with its submounts when `recursive`) with exactly
// the mount attributes `attrs` set and `clear` cleared, private: an OCI config's bind,
// whose options say which (runtime/oci/runc_plan.h).
Result<UniqueFd> PrepareBindTreeWithAttrs(const std::string& host_path, bool recursive,
                                          uint64_t attrs, uint64_t clear);

// Parent: a detached read-only bind of the host's /dev/null, to be mounted over a file that
// the jail must not read (a /proc entry). Unlike PrepareBindTree it is not nodev, so the
// masked file reads as empty, as runc's masks do, instead of failing every open with
// EACCES (which tools report as an error). Writes reach /dev/null, since a device node is
// writable on a read-only mount: harmless. Nosuid and noexec.
Result<UniqueFd> PrepareNullMaskTree();

// Parent, rootless mode: an unprivileged parent cannot clone the host's mounts (open_tree
// of them needs CAP_SYS_ADMIN over the host's mount namespace), so the child clones the
// path in its own copy of that namespace, before it mounts anything. The op records the
// attributes to apply and what the path is now (device, inode, not following a final
// symlink); the child refuses a path that has become something else since.
Status DeferBindTree(const std::string& host_path, bool read_only, MountOp* op);
// The same for PrepareNullMaskTree.
Status DeferNullMaskTree(MountOp* op);
// A host device node bound into the jail's /dev: mknod is not allowed in a user namespace,
// and a node on a filesystem mounted there would not work anyway (the kernel marks such
// mounts nodev). Read-write, nosuid, noexec.
Status DeferDeviceBind(const std::string& host_path, MountOp* op);
// The most binds a rootless plan may have: the child keeps their trees in a fixed array.
inline constexpr size_t kMaxDeferredBinds = 512;

// Child: writes all of `data` to `fd` (retrying short writes and EINTR). Syscalls only.
bool WriteWholeString(int fd, const std::string& data);

// Child: builds the root and pivots into it. On failure reports a SetupRecord on
// `report_fd` and returns false.
bool BuildRoot(const JailPlan& plan, int report_fd);

}  // namespace corral::jail
