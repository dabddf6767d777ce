// What `corral volume ls/inspect/rm` and the daemon's /api/corral/v1/volumes do, from one
// place so that the CLI and the HTTP API never drift apart. Parent side.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/volumes/volume_attach.h"
#include "runtime/volumes/volume_store.h"

namespace corral::runtime {

struct VolumeInfo {
  VolumeRecord record;
  std::string path;                  // the data directory, or the image
  std::optional<VolumeUsage> usage;  // only when asked for (a walk of the data)
  std::vector<VolumeUser> users;
};

Result<VolumeInfo> InspectVolume(const std::string& name, bool with_usage = true);
// Every volume; those that cannot be read in *unreadable.
std::vector<VolumeInfo> ListVolumes(bool with_usage,
                                    std::vector<UnreadableVolume>* unreadable = nullptr);

// Refused (kFailedPrecondition, naming them) while any sandbox or run mounts it, unless
// `force`: then its files go at once, and the sandboxes that mount it keep what they have
// open until they end. Taken in turn with attaches (its attach.lock), so no create can
// mount it in between. A volume created half-way (no record) is removed as it is.
Status RemoveVolume(const std::string& name, bool force);

// {name, kind ("directory" | "image"), path, created_at, size_bytes (null: none),
//  uid, gid, used_bytes and files (when measured), mounted_by: ["sandbox t1 (rw)", ...]}
nlohmann::json VolumeInfoJson(const VolumeInfo& info);

}  // namespace corral::runtime
