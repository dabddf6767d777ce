#include "runtime/volumes/sandbox_fork.h"

#include "runtime/sandboxes/workspace_snapshot.h"
#include "runtime/volumes/volume_attach.h"

namespace corral::runtime {

Result<ForkResult> ForkSandbox(const std::string& parent, CreateRequest request, std::string tag) {
  if (request.name.empty()) {
    return Error(ErrorCode::kInvalidArgument, "fork: the new sandbox needs a name");
  }
  if (!IsValidSandboxName(request.name)) {
    return Error(ErrorCode::kInvalidArgument,
                 "fork: '" + request.name + "' is no valid sandbox name ([A-Za-z0-9_-]{1,64})");
  }
  ASSIGN_OR_RETURN(SandboxInfo info, InspectSandbox(parent, Inspect::kLiveness));
  if (tag.empty()) tag = request.name + "-fork";
  ForkResult out;
  ASSIGN_OR_RETURN(out.snapshot, SnapshotSandbox(info.record.name, tag));
  // The parent's spec as it was asked for: what corral set for the parent itself (its
  // overlay's directories, its identity's key) is set anew for the fork.
  request.spec = info.record.spec;
  request.spec.workspace_overlay_dir.clear();
  request.spec.workspace_upper.clear();
  request.spec.workspace_layers.clear();
  request.spec.identity_key.clear();
  request.spec.identity_claimed_key.clear();
  request.idle_timeout_seconds = info.record.idle_timeout_seconds;
  request.from_snapshot = tag;
  auto created = CreateSandboxWithVolumes(std::move(request), /*create_missing=*/false);
  if (!created) {
    return created.error().WithContext("fork of " + info.record.name + " (its snapshot " + tag +
                                       " was taken and stays; corral snapshot rm " + tag +
                                       " once unused)");
  }
  out.sandbox = std::move(*created);
  return out;
}

}  // namespace corral::runtime
