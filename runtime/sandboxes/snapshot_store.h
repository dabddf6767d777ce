// Snapshots of a sandbox's overlaid workspace (`corral snapshot`, `create --from`, `fork`):
// what is kept, who uses it, what it costs against the budget. Taking one and starting
// from one: runtime/sandboxes/workspace_snapshot.h.
//
// A snapshot is one read-only overlayfs layer, the upper layer its sandbox had when it was
// taken, over the layers that sandbox had below it (the snapshots it came from), over the
// thread's workspace on the host. Layout, under the state directory:
//   <state>/snapshots/<tag>/snapshot.json   SnapshotRecord
//   <state>/snapshots/<tag>/layer/          the layer, never written again
//   <state>/snapshots/<tag>/tmp/            a copy of the sandbox's /tmp (a tmpfs, which no
//                                           layer can hold), copied into each new sandbox
//   <state>/snapshots/<tag>.partial/        a snapshot being taken, or cut short (its
//                                           intent.json says which sandbox; finished or
//                                           undone by the next operation that meets it)
//   <state>/snapshots/budget                the disk budget in bytes, when set
//   <state>/snapshots/.lock                 flock: takes, removals and creates from a
//                                           snapshot take turns
// A snapshot is used by every sandbox whose workspace has its layer below (the sandbox it
// was taken from, those created from it) and every snapshot taken over it; it cannot be
// removed while used.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime {

// Unless `corral snapshot budget` sets another: what every snapshot's layer may take in all.
inline constexpr int64_t kDefaultSnapshotBudget = int64_t{10} << 30;  // 10 GiB
// Layers one workspace may stack (overlayfs takes up to 500; each costs a lookup per level).
inline constexpr size_t kMaxSnapshotDepth = 64;

struct SnapshotRecord {
  int version = 1;
  std::string tag;
  std::string sandbox;        // taken from
  uint32_t owner_uid = 0;     // who took it
  double created_at = 0;      // unix seconds
  int64_t size_bytes = 0;     // disk space its own layer and its /tmp take
  int64_t tmp_bytes = 0;      // of which its copy of the sandbox's /tmp
  int64_t entries = 0;        // files, directories and links in its layer
  std::string user_data_dir;  // the thread directory whose workspace it lies over
  // Its layer first, then the layers below it (the snapshots it was taken over).
  std::vector<std::string> layers;
};

// <state>/snapshots, made when missing (owner-only).
Result<std::string> SnapshotsDir();
// 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit.
Status CheckSnapshotTag(const std::string& tag);
// <state>/snapshots/<tag>/layer: where `tag`'s layer lies once taken.
std::string SnapshotLayerDir(const std::string& snapshots_dir, const std::string& tag);

// The store's lock: exclusive for takes and removals, shared while a create starts from a
// snapshot (kept until its record is written).
Result<UniqueFd> LockSnapshots(bool shared = false);

Result<SnapshotRecord> ReadSnapshot(const std::string& tag);
Status WriteSnapshotRecord(const std::string& dir, const SnapshotRecord& record);
// Every snapshot, by tag; directories that cannot be read are named in `unreadable`.
std::vector<SnapshotRecord> ListSnapshots(std::vector<std::string>* unreadable = nullptr);

// Who uses the snapshot: "sandbox t1", "snapshot s2".
std::vector<std::string> SnapshotUsers(const SnapshotRecord& record);
// Refused (kFailedPrecondition, naming them) while anything uses it. Takes the lock.
Status RemoveSnapshot(const std::string& tag);

// The budget (bytes) and what the snapshots take now.
struct SnapshotBudget {
  int64_t budget_bytes = kDefaultSnapshotBudget;
  int64_t used_bytes = 0;
};
Result<SnapshotBudget> ReadSnapshotBudget();
Status SetSnapshotBudget(int64_t bytes);

// {tag, sandbox, owner_uid, created_at, size_bytes, tmp_bytes, entries, user_data_dir, depth,
//  used_by}
nlohmann::json SnapshotJson(const SnapshotRecord& record, const std::vector<std::string>& users);

}  // namespace corral::runtime
