#include "runtime/sandboxes/workspace_snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/tree_at.h"
#include "jail/image_mount.h"
#include "runtime/run/planner.h"
#include "runtime/sandboxes/mount_switch.h"
#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/workspace_overlay.h"
#include "runtime/spec/sizes.h"
#include "runtime/spec/workspace_layers.h"

namespace corral::runtime {

namespace {

constexpr const char* kIntentFile = "intent.json";
constexpr const char* kPartial = ".partial";
constexpr const char* kRemoving = ".removing";

// What a snapshot is about to do, written before it changes anything.
struct Intent {
  std::string sandbox;
  std::string tag;
  std::string overlay_dir;         // the sandbox's <state>/overlays/<name>
  std::string old_upper;           // its upper layer's name there: the snapshot's layer to be
  std::string new_upper;           // the upper layer it goes on with
  std::vector<std::string> below;  // the layers below the old upper (the spec's)
  std::string user_data_dir;
  uint32_t owner_uid = 0;
  double created_at = 0;
};

std::string IntentText(const Intent& in) {
  return nlohmann::json{{"sandbox", in.sandbox},
                        {"tag", in.tag},
                        {"overlay_dir", in.overlay_dir},
                        {"old_upper", in.old_upper},
                        {"new_upper", in.new_upper},
                        {"below", in.below},
                        {"user_data_dir", in.user_data_dir},
                        {"owner_uid", in.owner_uid},
                        {"created_at", in.created_at}}
      .dump(2);
}

Result<Intent> ReadIntent(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  try {
    const auto j = nlohmann::json::parse(text);
    Intent in;
    j.at("sandbox").get_to(in.sandbox);
    j.at("tag").get_to(in.tag);
    j.at("overlay_dir").get_to(in.overlay_dir);
    j.at("old_upper").get_to(in.old_upper);
    j.at("new_upper").get_to(in.new_upper);
    j.at("below").get_to(in.below);
    j.at("user_data_dir").get_to(in.user_data_dir);
    j.at("owner_uid").get_to(in.owner_uid);
    j.at("created_at").get_to(in.created_at);
    return in;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kIo, path + ": corrupt snapshot intent: " + e.what());
  }
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Status RemovePath(const std::string& path) {
  const size_t slash = path.rfind('/');
  UniqueFd parent(::open(path.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return errno == ENOENT ? Ok() : Error::FromErrno(errno, path.substr(0, slash));
  return RemoveAt(parent.get(), path.substr(slash + 1));
}

Result<int64_t> SandboxTmpBytes(pid_t init_pid) {
  ASSIGN_OR_RETURN(UniqueFd root, OpenSandboxRoot(init_pid));
  ASSIGN_OR_RETURN(UniqueFd tmp, OpenBeneath(root.get(), "tmp", O_RDONLY | O_DIRECTORY));
  return UsageAt(tmp.get()).bytes;
}

int64_t DirBytes(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  return fd ? UsageAt(fd.get()).bytes : 0;
}

// Undone: the new upper layer and the partial snapshot go; the sandbox still has (or had,
// when it died) the old upper layer mounted, which stays where it was.
Status RollBack(const std::string& snapshots, const Intent& in) {
  RETURN_IF_ERROR(RemovePath(in.overlay_dir + "/" + in.new_upper));
  RETURN_IF_ERROR(RemovePath(in.overlay_dir + "/" + WorkspaceWorkName(in.new_upper)));
  return RemovePath(snapshots + "/" + in.tag + kPartial);
}

// Finished: the old upper layer becomes the snapshot's layer, the sandbox's record names
// the new upper layer over it, and the snapshot gets its name. Each step can run twice.
Status RollForward(const std::string& snapshots, const Intent& in) {
  const std::string partial = snapshots + "/" + in.tag + kPartial;
  const std::string layer = partial + "/layer";
  if (!Exists(layer)) {
    const std::string old_upper = in.overlay_dir + "/" + in.old_upper;
    if (::rename(old_upper.c_str(), layer.c_str()) != 0) {
      return Error::FromErrno(errno, "rename " + old_upper + " to " + layer);
    }
  }
  SnapshotRecord record;
  record.tag = in.tag;
  record.sandbox = in.sandbox;
  record.owner_uid = in.owner_uid;
  record.created_at = in.created_at;
  record.user_data_dir = in.user_data_dir;
  UniqueFd layer_fd(::open(layer.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!layer_fd) return Error::FromErrno(errno, layer);
  const TreeUsage usage = UsageAt(layer_fd.get());
  record.tmp_bytes = DirBytes(partial + "/tmp");
  record.size_bytes = usage.bytes + record.tmp_bytes;
  record.entries = usage.entries;
  record.layers = {SnapshotLayerDir(snapshots, in.tag)};
  record.layers.insert(record.layers.end(), in.below.begin(), in.below.end());
  RETURN_IF_ERROR(WriteSnapshotRecord(partial, record));
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  if (auto sandbox = store.Find(in.sandbox);
      sandbox && sandbox->spec.workspace_overlay_dir == in.overlay_dir &&
      sandbox->spec.workspace_upper != in.new_upper) {
    sandbox->spec.workspace_upper = in.new_upper;
    sandbox->spec.workspace_layers = record.layers;
    RETURN_IF_ERROR(store.Save(*sandbox));
  }
  const std::string final_dir = snapshots + "/" + in.tag;
  if (::rename(partial.c_str(), final_dir.c_str()) != 0) {
    return Error::FromErrno(errno, "rename " + partial);
  }
  (void)::unlink((final_dir + "/" + kIntentFile).c_str());
  // The old overlay's scratch directory: nothing writes through that overlay any more.
  (void)RemovePath(in.overlay_dir + "/" + WorkspaceWorkName(in.old_upper));
  return Ok();
}

// A snapshot cut short: finished when the sandbox had the new upper layer mounted (or the
// layer was already moved), else undone.
Status Finish(const std::string& snapshots, const Intent& in) {
  const std::string layer = snapshots + "/" + in.tag + kPartial + "/layer";
  bool forward = Exists(layer);
  if (!forward && Exists(in.overlay_dir + "/" + in.old_upper)) {
    ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
    auto sandbox = store.Find(in.sandbox);
    forward = sandbox && ProcessRunning(sandbox->init_pid, sandbox->init_start_ticks) &&
              MountedUpperLayer(*sandbox) == in.new_upper;
  }
  return forward ? RollForward(snapshots, in) : RollBack(snapshots, in);
}

// Names of snapshots cut short (<tag>.partial) and removals cut short (.<tag>.removing).
std::vector<std::string> Leftovers(const std::string& snapshots) {
  std::vector<std::string> out;
  UniqueFd fd(::open(snapshots.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return out;
  for (std::string& name : EntryNames(fd.get())) {
    if (name.ends_with(kPartial) || (name[0] == '.' && name.ends_with(kRemoving))) {
      out.push_back(std::move(name));
    }
  }
  return out;
}

}  // namespace

Status FinishWorkspaceSnapshots(const std::string& sandbox) {
  ASSIGN_OR_RETURN(std::string snapshots, SnapshotsDir());
  if (Leftovers(snapshots).empty()) return Ok();  // the common case: no lock taken
  ASSIGN_OR_RETURN(UniqueFd lock, LockSnapshots());
  for (const std::string& name : Leftovers(snapshots)) {
    const std::string path = snapshots + "/" + name;
    if (name.ends_with(kRemoving)) {
      RETURN_IF_ERROR(RemovePath(path));
      continue;
    }
    if (!Exists(path + "/" + kIntentFile)) {
      // Cut short before its intent was in place (written whole, then renamed): nothing
      // else was made yet.
      RETURN_IF_ERROR(RemovePath(path));
      continue;
    }
    ASSIGN_OR_RETURN(Intent in, ReadIntent(path + "/" + kIntentFile));
    if (!sandbox.empty() && in.sandbox != sandbox) continue;
    if (Status st = Finish(snapshots, in); !st) {
      return st.error().WithContext("finishing snapshot " + in.tag);
    }
  }
  return Ok();
}

Result<SnapshotRecord> SnapshotSandbox(const std::string& sandbox, const std::string& tag) {
  RETURN_IF_ERROR(CheckSnapshotTag(tag));
  ASSIGN_OR_RETURN(SandboxRecord found, OverlaidSandbox(sandbox));
  // Held: no removal while the snapshot is taken.
  ASSIGN_OR_RETURN(SandboxHold hold, HoldSandbox(found.name));
  RETURN_IF_ERROR(FinishWorkspaceCommit(found.spec));
  RETURN_IF_ERROR(FinishWorkspaceSnapshots(found.name));
  ASSIGN_OR_RETURN(SandboxRecord record, OverlaidSandbox(found.name));  // as finished
  const JailSpec& spec = record.spec;
  if (spec.workspace_layers.size() + 1 >= kMaxSnapshotDepth) {
    return Error(ErrorCode::kFailedPrecondition,
                 "sandbox " + record.name + " has " + std::to_string(spec.workspace_layers.size()) +
                     " snapshot layers below its workspace, the most it may have; start a new "
                     "sandbox from its last snapshot instead");
  }
  ASSIGN_OR_RETURN(PausedWhile paused, PausedWhile::For(record));
  ASSIGN_OR_RETURN(UniqueFd lock, LockSnapshots());  // released before the resume
  ASSIGN_OR_RETURN(std::string snapshots, SnapshotsDir());
  if (Exists(snapshots + "/" + tag) || Exists(snapshots + "/" + tag + kPartial)) {
    return Error(ErrorCode::kAlreadyExists, "snapshot " + tag + " exists (corral snapshot ls)");
  }
  const std::string old_upper = WorkspaceUpperDir(spec);
  UniqueFd upper_fd(::open(old_upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat upper_st;
  if (!upper_fd || ::fstat(upper_fd.get(), &upper_st) != 0) {
    return Error::FromErrno(errno, old_upper);
  }
  ASSIGN_OR_RETURN(const int64_t tmp_bytes, SandboxTmpBytes(record.init_pid));
  const int64_t size = UsageAt(upper_fd.get()).bytes + tmp_bytes;
  ASSIGN_OR_RETURN(SnapshotBudget budget, ReadSnapshotBudget());
  if (budget.used_bytes + size > budget.budget_bytes) {
    return Error(ErrorCode::kFailedPrecondition,
                 "snapshot " + tag + " would take " + FormatSize(size) +
                     ", and the snapshots take " + FormatSize(budget.used_bytes) +
                     " of their budget of " + FormatSize(budget.budget_bytes) +
                     " (corral snapshot rm frees some; corral snapshot budget SIZE sets it)");
  }

  Intent in;
  in.sandbox = record.name;
  in.tag = tag;
  in.overlay_dir = spec.workspace_overlay_dir;
  in.old_upper = WorkspaceUpperName(spec);
  in.new_upper = "upper-" + NewSandboxId();
  in.below = spec.workspace_layers;
  in.user_data_dir = spec.user_data_dir.value_or("");
  in.owner_uid = ::getuid();
  in.created_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string partial = snapshots + "/" + tag + kPartial;
  if (::mkdir(partial.c_str(), 0700) != 0) return Error::FromErrno(errno, "mkdir " + partial);
  // Whole or not at all: a recovery that finds none knows nothing else was made.
  if (Status st = WriteFileWhole(partial + "/" + kIntentFile, IntentText(in)); !st) {
    (void)RemovePath(partial);
    return st.error();
  }
  // From here on a failure undoes what was made.
  auto undo = [&](const Error& e) -> Error {
    (void)RollBack(snapshots, in);
    return e;
  };
  // The sandbox's /tmp, a tmpfs: copied (it is paused), into the snapshot to be.
  {
    auto root = OpenSandboxRoot(record.init_pid);
    UniqueFd to(::open(partial.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) return undo(root.error());
    if (!to) return undo(Error::FromErrno(errno, partial));
    if (Status st = CopyAt(root->get(), "tmp", to.get(), "tmp"); !st) {
      return undo(st.error().WithContext("copy of the sandbox's /tmp"));
    }
  }
  const std::string new_upper = in.overlay_dir + "/" + in.new_upper;
  const std::string new_work = in.overlay_dir + "/" + WorkspaceWorkName(in.new_upper);
  for (const std::string& d : {new_upper, new_work}) {
    if (::mkdir(d.c_str(), 0700) != 0) return undo(Error::FromErrno(errno, "mkdir " + d));
  }
  // The overlay's root is the upper layer's: as the old one was (the workspace's owner).
  if (::chown(new_upper.c_str(), upper_st.st_uid, upper_st.st_gid) != 0 ||
      ::chmod(new_upper.c_str(), upper_st.st_mode & 07777) != 0) {
    return undo(Error::FromErrno(errno, "chown " + new_upper));
  }
  if (Status st = MarkUpperLayer(new_upper, in.new_upper); !st) return undo(st.error());
  std::vector<std::string> lowers = {old_upper};
  lowers.insert(lowers.end(), in.below.begin(), in.below.end());
  lowers.push_back(WorkspaceHostDir(spec));
  auto tree = jail::PrepareOverlayTree(lowers, new_upper, new_work);
  if (!tree) return undo(tree.error());
  std::vector<MountSwitch> mounts(1);
  mounts[0].host_path = new_upper;
  mounts[0].jail_path = kWorkspacePath;
  mounts[0].tree = std::move(*tree);
  mounts[0].replace = true;
  mounts[0].seal_replaced = true;
  if (Status st = SwitchMountsInSandbox(
          {"sandbox " + record.name, record.init_pid, record.init_start_ticks}, mounts);
      !st) {
    if (st.error().code() == ErrorCode::kFailedPrecondition) {
      return undo(Error(ErrorCode::kFailedPrecondition,
                        "sandbox " + record.name +
                            ": a process in it has a file of its workspace open for writing, "
                            "and a snapshot must be the last change to its layer; close the "
                            "file (or end the process) and take the snapshot again",
                        EBUSY));
    }
    return undo(st.error());
  }
  RETURN_IF_ERROR(RollForward(snapshots, in));
  return ReadSnapshot(tag);
}

Result<SnapshotHold> HoldSnapshot(const std::string& tag) {
  RETURN_IF_ERROR(CheckSnapshotTag(tag));
  RETURN_IF_ERROR(FinishWorkspaceSnapshots());
  SnapshotHold hold;
  ASSIGN_OR_RETURN(hold.lock, LockSnapshots(/*shared=*/true));
  ASSIGN_OR_RETURN(hold.record, ReadSnapshot(tag));
  return hold;
}

Status StartFromSnapshot(const SnapshotRecord& snapshot, JailSpec* spec) {
  auto normal = [](const std::string& dir) {
    std::string out = std::filesystem::path(dir).lexically_normal().string();
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
  };
  if (!spec->user_data_dir) {
    spec->user_data_dir = snapshot.user_data_dir;
  } else if (normal(*spec->user_data_dir) != normal(snapshot.user_data_dir)) {
    return Error(ErrorCode::kInvalidArgument, "user_data_dir: a sandbox from snapshot " +
                                                  snapshot.tag +
                                                  " works on its thread "
                                                  "directory, " +
                                                  snapshot.user_data_dir +
                                                  " (the snapshot holds changes to "
                                                  "its workspace); leave --user-data out");
  }
  spec->workspace_overlay = true;
  spec->workspace_layers = snapshot.layers;
  return Ok();
}

Status RestoreSnapshotTmp(const SnapshotRecord& snapshot, pid_t init_pid) {
  ASSIGN_OR_RETURN(std::string snapshots, SnapshotsDir());
  const std::string dir = snapshots + "/" + snapshot.tag + "/tmp";
  UniqueFd from(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!from) return errno == ENOENT ? Ok() : Error::FromErrno(errno, dir);
  ASSIGN_OR_RETURN(UniqueFd root, OpenSandboxRoot(init_pid));
  ASSIGN_OR_RETURN(UniqueFd to, OpenBeneath(root.get(), "tmp", O_RDONLY | O_DIRECTORY));
  for (const std::string& name : EntryNames(from.get())) {
    if (Status st = CopyAt(from.get(), name, to.get(), name); !st) {
      return st.error().WithContext("snapshot " + snapshot.tag + ": its /tmp into the sandbox");
    }
  }
  return Ok();
}

}  // namespace corral::runtime
