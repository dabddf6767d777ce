// Named volumes: host directories (or, with a size, ext4 images) that corral owns, which
// outlive every sandbox that mounts them (`corral volume create`, `--volume NAME:/path`).
//
// Layout, under the state directory (not the runtime directory: /run forgets everything at
// a reboot, a volume must not):
//   <state>/volumes/<name>/volume.json   VolumeRecord, written last and atomically: a
//                                        directory without it is a create cut short
//   <state>/volumes/<name>/data/         the files (a volume without a size), or
//   <state>/volumes/<name>/image.ext4    an ext4 image of the volume's size
//   <state>/volumes/<name>/users/<sbx>   "rw" or "ro": a persistent sandbox that mounted it
//                                        (volume_attach.h; stale ones are ignored)
//   <state>/volumes/<name>/attach.lock   flock: attaches and removals take turns
//   <state>/volumes/<name>/use.lock      flock held by each `corral run` that mounts it
// <state> is $CORRAL_STATE_DIR when set (absolute), else /var/lib/corral for root and
// $XDG_STATE_HOME/corral (or ~/.local/state/corral) for anyone else. <state>/volumes is
// owner-only; what the sandboxes see is the data, through their mounts.
//
// Ownership: the files belong on disk to the volume's own ids (VolumeRecord uid/gid): as
// root, the reserved identity's slot for "volume:<name>" where the host has a reserved
// range (runtime/run/identity.h), else the sandbox user's default ids (1000); as anyone
// else, the caller's ids. Every sandbox that mounts the volume sees them as its sandbox
// user's, whatever host ids that user has (an id-mapped mount, runtime/run/root_layout.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace corral::runtime {

// <state dir>/volumes, or why there is none (a non-root caller without HOME).
Result<std::string> VolumesDir();

struct VolumeRecord {
  int version = 1;
  std::string name;
  double created_at = 0;  // unix seconds
  uint32_t uid = 0;       // the ids its files have on disk
  uint32_t gid = 0;
  // A size: the volume is an ext4 image of this many bytes (what is usable is a little less:
  // the file system's own structures). None: a directory, bounded by its host file system.
  std::optional<int64_t> size_bytes;
};

struct VolumeUsage {
  int64_t bytes = 0;  // disk space its files take (the image's allocated blocks for a sized one)
  int64_t files = 0;  // files and directories (not counted for an image)
};

// A volume directory that cannot be read: a create cut short (no volume.json) or a corrupt
// record. `corral volume rm NAME` removes it.
struct UnreadableVolume {
  std::string name;
  std::string why;
};

class VolumeStore {
 public:
  // Makes <state>/volumes (owner-only) if needed.
  static Result<VolumeStore> Open();

  const std::string& root() const { return root_; }
  std::string DirOf(const std::string& name) const { return root_ + "/" + name; }
  // What a sandbox mounts: the data directory, or the image.
  std::string PathOf(const VolumeRecord& record) const;

  // kAlreadyExists when the name is taken; kInvalidArgument for a bad name or size.
  Result<VolumeRecord> Create(const std::string& name, std::optional<int64_t> size_bytes);
  Result<VolumeRecord> Find(const std::string& name) const;
  std::vector<VolumeRecord> List(std::vector<UnreadableVolume>* unreadable = nullptr) const;
  // Walks the data (never following a symlink), or reads the image's allocation.
  VolumeUsage Usage(const VolumeRecord& record) const;
  // Removes the directory whatever it holds (the caller checked the users): renamed aside
  // first, so the name is free at once and a removal cut short leaves no half volume.
  Status RemoveDir(const std::string& name);

 private:
  explicit VolumeStore(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

// The smallest size a volume may have: room for ext4's journal and tables.
inline constexpr int64_t kMinVolumeSize = 16 * 1024 * 1024;

}  // namespace corral::runtime
