// Taking a snapshot of a sandbox's overlaid workspace, and starting sandboxes from one
// (the store: runtime/sandboxes/snapshot_store.h; what users see: docs/lifecycle.md).
//
// A snapshot costs no copy of the workspace: the sandbox is paused, its workspace's upper
// layer becomes the snapshot's layer, and the sandbox goes on with a new, empty upper layer over
// it. Inside the sandbox's mount namespace the old overlay is made read-only (so nothing can write
// to the layer again: refused while a process has a workspace file open for writing, and the
// sandbox is then as it was), detached, and replaced by the new overlay
// (runtime/sandboxes/mount_switch.h). A process whose current directory was in the old
// workspace keeps seeing it, read-only, until it changes directory. The sandbox's /tmp, a
// tmpfs no layer can hold, is copied into the snapshot, and into each sandbox made from it.
//
// Killed at any point, a snapshot leaves the old state or the new one, never a mix: its
// <tag>.partial directory and intent.json are written before anything changes; the next
// operation on the sandbox (diff, commit, resume, rm, another snapshot, snapshot ls) meets
// them and finishes the snapshot when the sandbox has the new upper layer mounted (the
// layer's name, kWorkspaceUpperXattr, on the overlay's root says which), else undoes it.
// Parent side, root only.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/sandboxes/snapshot_store.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// Snapshots the workspace of live sandbox `sandbox` (created with a workspace overlay) as
// `tag`. Refused: no overlay, a tag taken, the budget exceeded (naming the figures), too
// many layers, a workspace file open for writing.
Result<SnapshotRecord> SnapshotSandbox(const std::string& sandbox, const std::string& tag);

// Finishes or undoes snapshots cut short: those of `sandbox`, or every one when empty.
// Removals cut short are finished too.
Status FinishWorkspaceSnapshots(const std::string& sandbox = {});

// For a create from snapshot `tag`: its record, with the store's lock held shared so that
// the snapshot cannot be removed before the new sandbox's record names its layers.
struct SnapshotHold {
  SnapshotRecord record;
  UniqueFd lock;
};
Result<SnapshotHold> HoldSnapshot(const std::string& tag);
// A create's spec set to start from `snapshot`: an overlaid workspace with its layers,
// on its thread directory (the default; another is refused: the layers hold changes to
// that one's workspace).
Status StartFromSnapshot(const SnapshotRecord& snapshot, JailSpec* spec);
// The snapshot's copy of its sandbox's /tmp, copied into the /tmp of the new sandbox whose
// init is `init_pid` (a tmpfs: a copy, bounded by its size).
Status RestoreSnapshotTmp(const SnapshotRecord& snapshot, pid_t init_pid);

}  // namespace corral::runtime
