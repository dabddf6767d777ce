// Volumes in use: attaching them to a run or a create, and who uses one.
//
// A volume is shared read-only by any number of sandboxes, or mounted read-write by one.
// The users are of two kinds:
//   - persistent sandboxes: the volume's users/<sandbox> entry ("rw" or "ro"), written at
//     attach; an entry counts while that sandbox lives and its record mounts the volume
//     (a removed sandbox's entry is stale, ignored and swept later);
//   - `corral run`s: each holds the volume's use.lock (shared for ro, exclusive for rw) for
//     as long as it runs, so a run killed any way stops counting at once.
// An image volume (one with a size) is also checked against the loop devices: an image
// still attached (a sandbox being removed) is never mounted read-write a second time,
// which would corrupt it.
// Attaching holds the volume's attach.lock until the create has written its record, so
// two creates never both see a volume free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec.h"
#include "runtime/volumes/volume_store.h"

namespace corral::runtime {

struct VolumeUser {
  std::string sandbox;  // empty for a run (`corral run`) or a loop device
  std::string what;     // "sandbox t1 (rw)", "a corral run (ro)", "/dev/loop3 (rw)"
  bool read_write = false;
};

// The volume's attach.lock, held exclusively: attaches and removals of `name` take turns.
Result<UniqueFd> LockVolumeAttach(const VolumeStore& store, const std::string& name);

// Who mounts `name` now.
std::vector<VolumeUser> VolumeUsers(const VolumeStore& store, const std::string& name);

// The volumes of one run or create, attached: the spec's volume mounts filled in (the
// volume's path, image or not, its disk ids), each checked against its users, and held.
// For a create, keep it until CreateSandbox returned; for a run, until the run ended.
class VolumeAttachment {
 public:
  VolumeAttachment() = default;
  VolumeAttachment(VolumeAttachment&&) = default;
  VolumeAttachment& operator=(VolumeAttachment&&) = default;
  ~VolumeAttachment();

  // A create that failed: its users entries go (the sandbox never mounted anything).
  void Abandon();

 private:
  friend Result<VolumeAttachment> AttachVolumes(JailSpec*, const std::string&, bool);
  std::vector<UniqueFd> attach_locks_;  // released when this goes
  std::vector<UniqueFd> use_locks_;     // a run's, held for the run
  std::vector<std::string> user_entries_;
};

// `sandbox`: the persistent sandbox being created (its users entries are written), or
// empty for a run (it holds use.lock). `create_missing`: a volume that does not exist is
// made, without a size (docker's `-v NAME:/path`); otherwise kNotFound. A spec without
// volume mounts gives an empty attachment.
Result<VolumeAttachment> AttachVolumes(JailSpec* spec, const std::string& sandbox,
                                       bool create_missing);

// CreateSandbox with the request's volumes attached while it creates (a sandbox without a
// name gets its id as one first: the volumes' users entries name it).
Result<SandboxRecord> CreateSandboxWithVolumes(CreateRequest request, bool create_missing);

}  // namespace corral::runtime
