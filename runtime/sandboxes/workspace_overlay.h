// A workspace whose changes are reviewed before they reach the host (`workspace_overlay:
// true`, `corral create --workspace-overlay`): the sandbox's /mnt/user-data/workspace is an
// overlay of the host's user_data_dir/workspace (its lower layer, never written) under an
// upper layer of corral's own, <state>/overlays/<name>/upper. `corral diff` compares the two,
// `corral commit` writes the changes to the host directory, `corral commit --discard` drops
// them. What users see: docs/lifecycle.md "Review before commit".
//
// A commit is all or nothing, also when corral is killed in the middle: every new file, link
// or directory is first staged beside the host directory (<user_data_dir>/.corral-commit-*),
// then a journal of the renames and removals that publish them is written (the commit
// point), then they are done and the journal removed. A commit cut short before its journal
// leaves the host directory as it was (the staging is removed by the next diff, commit or
// rm); one cut short after it is finished by them (every step can be done again).
// The sandbox is paused while a commit or discard runs, so that it reads one state.
// Parent side, root only.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// For a create of sandbox `name` with spec->workspace_overlay: sets workspace_overlay_dir to
// <state>/overlays/<name> and makes its upper/ (owned and moded as the workspace, whose
// attributes the overlay's root takes from it) and work/; one left by an earlier sandbox of
// the name is removed first.
Status PrepareWorkspaceOverlay(JailSpec* spec, const std::string& name);
// A commit cut short (corral killed): finished when its journal was written, else undone.
// Run by every diff, commit and removal of the sandbox, and before a resume lets it run again
// (a commit killed half-way leaves it paused), so the sandbox never sees the staging.
Status FinishWorkspaceCommit(const JailSpec& spec);
// The overlay's directory, after finishing a commit cut short (no error: a removal goes on).
void RemoveWorkspaceOverlay(const JailSpec& spec);

// The live sandbox `sandbox`, which has a workspace overlay; else kFailedPrecondition (no
// overlay) or kNotFound (none, or dead).
Result<SandboxRecord> OverlaidSandbox(const std::string& sandbox);
// The sandbox's root, through its init (/proc/<pid>/root): an O_PATH directory fd, for
// *At calls beneath it.
Result<UniqueFd> OpenSandboxRoot(pid_t init_pid);
// The workspace as the sandbox sees it (its overlay's merged view), through its init's
// root: a directory fd, opened beneath that root without following symlinks.
Result<UniqueFd> OpenMergedWorkspace(const SandboxRecord& record);
// Names the upper layer `dir` as `name` (kWorkspaceUpperXattr), and which one the sandbox
// has mounted ("" when it cannot be told: dead, or an overlay from before the names).
Status MarkUpperLayer(const std::string& dir, const std::string& name);
std::string MountedUpperLayer(const SandboxRecord& record);

enum class ChangeKind { kAdded, kChanged, kDeleted };
struct WorkspaceChange {
  ChangeKind kind = ChangeKind::kAdded;
  std::string path;  // relative to the workspace, e.g. "src/main.py"
  char type = 'f';   // what it is now (deleted: what it was): f file, d dir, l symlink, o other
};
// "A", "C" or "D", as `docker diff` writes them.
const char* ChangeLetter(ChangeKind kind);
const char* ChangeName(ChangeKind kind);  // "added", "changed", "deleted"

// The workspace's changes against the host directory, in path order: added (not in the
// host directory), changed (another type, other content, mode or link target) and deleted.
// An added or deleted directory is listed with everything below it. A rename is a deletion
// and an addition. Files the sandbox wrote back as they were are no change.
Result<std::vector<WorkspaceChange>> DiffWorkspace(const std::string& sandbox);

struct CommitSummary {
  size_t written = 0;  // files, links and directories written (a new directory counts once)
  size_t removed = 0;
};
// Writes the changes to the host directory (see above). Symlinks are written as symlinks,
// never followed, and nothing is written through one: a host directory that has a symlink
// where the sandbox has a directory gets the directory.
Result<CommitSummary> CommitWorkspace(const std::string& sandbox);
// Drops the changes: the sandbox sees the host directory's files again (written back
// through the overlay; its upper layer keeps identical copies, which are no change).
Result<CommitSummary> DiscardWorkspace(const std::string& sandbox);

}  // namespace corral::runtime
