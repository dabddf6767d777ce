// File systems mounted for a jail without a place in the host's mount table.
//
// A file system image (a volume with a size, runtime/volumes/) as a detached mount: the
// image is attached to a free loop device and its ext4 mounted with fsopen/fsmount, never
// in the host's mount table. The loop device is set to clear itself, so it goes away with
// the last mount of it: when the jail's mount namespace ends, nothing is left on the host.
// Parent side, root only.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::jail {

// The image's ext4 as a detached mount tree (nosuid, nodev, private; read-only if asked,
// the loop device too), for a MountOp::kBind's source_fd.
Result<UniqueFd> PrepareImageTree(const std::string& image, bool read_only);

// An overlay of `lowers` (read-only, topmost first) under `upper` (where writes land;
// `work` is overlayfs's scratch directory on the same file system) as a detached mount
// tree: a sandbox's workspace whose changes are kept apart
// (runtime/sandboxes/workspace_overlay.h), over the snapshots it was made from. nosuid,
// nodev, private. Renames of lower directories copy (redirect_dir off) and no metadata-only
// copy-ups are made (metacopy off): what an upper layer holds is whole files, which is what
// `corral diff` and `commit` read, and what a snapshot keeps.
Result<UniqueFd> PrepareOverlayTree(const std::vector<std::string>& lowers,
                                    const std::string& upper, const std::string& work);

// The loop devices `image` is attached to now (a jail that mounts it, or one going away),
// each with whether it is read-only: "/dev/loop3 (rw)". Empty when none.
std::vector<std::string> LoopDevicesOf(const std::string& image, bool* any_writable);

}  // namespace corral::jail
