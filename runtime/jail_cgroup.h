// The cgroup side of a run: pick the driver, reap leftovers of crashed corrals, create the
// run's cgroup and apply the spec's limits — or refuse, unless the spec opts into running
// without limits (unsafe.allow_missing_limits). Parent side.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "cgroups/cgroup.h"
#include "runtime/spec.h"

namespace corral::runtime {

struct JailCgroup {
  std::unique_ptr<cgroups::CgroupManager> manager;  // null when running without cgroups
  std::unique_ptr<cgroups::Cgroup> cgroup;           // null when running without cgroups
  std::vector<std::string> warnings;
  std::jthread attach_warmup;  // see CgroupManager::WarmUpAttach; joined on destruction
};

cgroups::Limits CgroupLimitsFor(const LimitsSpec& limits);
cgroups::ManagerOptions ManagerOptionsFor(const CgroupSpec& cgroups);

Result<JailCgroup> CreateJailCgroup(const JailSpec& spec);

}  // namespace corral::runtime
