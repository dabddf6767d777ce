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
#include "runtime/spec/spec.h"

namespace corral::runtime {

struct JailCgroup {
  std::shared_ptr<cgroups::CgroupManager> manager;  // null when running without cgroups
  std::unique_ptr<cgroups::Cgroup> cgroup;          // null when running without cgroups
  std::vector<std::string> warnings;
  std::jthread attach_warmup;  // see CgroupManager::WarmUpAttach; joined on destruction
};

// Below the configured parent (cgroups.parent, "corral"), where one-shot runs' cgroups are
// made: run-<pid>-<n>. Persistent sandboxes' sbx-<name> are beside it.
inline constexpr const char* kOneShotParent = "runs";

cgroups::Limits CgroupLimitsFor(const LimitsSpec& limits);
cgroups::ManagerOptions ManagerOptionsFor(const CgroupSpec& cgroups);

// Where a spec's cgroups are made: the driver picked and the leftovers of crashed corrals
// reaped, once for any number of jails (a pool makes many; detecting the hierarchies and
// scanning the parent for orphans cost more than the mkdirs). Without a usable driver and
// with unsafe.allow_missing_limits: no manager, and the warning every jail carries.
struct CgroupParent {
  std::shared_ptr<cgroups::CgroupManager> manager;
  std::vector<std::string> warnings;
};
Result<CgroupParent> OpenCgroupParent(const JailSpec& spec);

// One jail's cgroup under `parent`, with the spec's limits applied.
Result<JailCgroup> CreateJailCgroup(const JailSpec& spec, const CgroupParent& parent);
// Both of the above, for a single run.
Result<JailCgroup> CreateJailCgroup(const JailSpec& spec);

}  // namespace corral::runtime
