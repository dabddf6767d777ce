// `corral fork NAME NEW`: a snapshot of sandbox NAME's workspace, and a new sandbox NEW
// from it with NAME's spec (runtime/sandboxes/workspace_snapshot.h). Files only: NEW starts
// with an init of its own, no process of NAME's is copied. Here, beside the volumes,
// because NEW attaches the volumes NAME mounts as any create does (read-only ones are
// shared; a read-write one cannot be mounted twice, and the fork is refused).
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/snapshot_store.h"

namespace corral::runtime {

struct ForkResult {
  SnapshotRecord snapshot;  // taken of the parent: both sandboxes now stand on its layer
  SandboxRecord sandbox;    // the new one
};

// `request.name` is the new sandbox's (required); its spec and idle timeout are taken from
// `parent`'s record; `request.network_never` is kept. `tag` empty: "<NEW>-fork". When the
// create fails the snapshot stays (the parent stands on it), and the error says so.
Result<ForkResult> ForkSandbox(const std::string& parent, CreateRequest request,
                               std::string tag = {});

}  // namespace corral::runtime
