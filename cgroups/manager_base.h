// ManagerBase: what the v1 and v2 managers share (options, orphan reaping). Internal to
// cgroups/; callers use CgroupManager from cgroups/cgroup.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cgroups/cgroup.h"

namespace corral::cgroups::internal {

class ManagerBase : public CgroupManager {
 public:
  explicit ManagerBase(ManagerOptions options) : options_(std::move(options)) {}

  // orphans.cc
  Result<std::vector<std::string>> ReapOrphans() override;
  Status RemoveLeftover(const std::string& name) override;

 protected:
  // Names of the cgroups directly under the parent (union over hierarchies on v1).
  virtual Result<std::vector<std::string>> ListCgroups() = 0;
  // A handle to `name` over whichever hierarchies hold it, for removing leftovers that a
  // crash may have left half-created.
  virtual Result<std::unique_ptr<Cgroup>> OpenForCleanup(const std::string& name) = 0;

  const ManagerOptions options_;
};

}  // namespace corral::cgroups::internal
