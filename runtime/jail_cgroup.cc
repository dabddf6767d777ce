#include "runtime/jail_cgroup.h"

#include <spdlog/spdlog.h>

namespace corral::runtime {

cgroups::Limits CgroupLimitsFor(const LimitsSpec& limits) {
  cgroups::Limits out;
  out.memory_bytes = limits.memory_bytes;
  out.no_swap = true;
  out.cpus = limits.cpus;
  out.pids = limits.pids;
  return out;
}

cgroups::ManagerOptions ManagerOptionsFor(const CgroupSpec& cgroups) {
  cgroups::ManagerOptions options;
  options.driver = cgroups.driver;
  options.parent = cgroups.parent;
  return options;
}

Result<JailCgroup> CreateJailCgroup(const JailSpec& spec) {
  JailCgroup result;
  bool allow_missing = spec.unsafe.allow_missing_limits;
  auto manager = cgroups::CgroupManager::Create(ManagerOptionsFor(spec.cgroups));
  if (!manager) {
    if (!allow_missing) {
      return manager.error().WithContext(
          "cannot enforce memory/cpu/pids limits (set unsafe.allow_missing_limits to run "
          "without them)");
    }
    result.warnings.push_back("running WITHOUT cgroup limits: " + manager.error().message());
    return result;
  }
  result.manager = std::move(*manager);
  if (auto reaped = result.manager->ReapOrphans(); reaped && !reaped->empty()) {
    spdlog::info("removed {} cgroup(s) left by crashed corral runs", reaped->size());
  }
  auto cgroup = result.manager->CreateCgroup(cgroups::CgroupManager::OneShotName());
  if (!cgroup) return cgroup.error().WithContext("creating the run's cgroup");
  result.cgroup = std::move(*cgroup);
  auto warnings = result.cgroup->ApplyLimits(CgroupLimitsFor(spec.limits), allow_missing);
  if (!warnings) {
    return warnings.error().WithContext(
        "cannot enforce the configured limits (set unsafe.allow_missing_limits to run "
        "without them)");
  }
  for (auto& w : *warnings) result.warnings.push_back(std::move(w));
  result.attach_warmup = result.manager->WarmUpAttach();
  return result;
}

}  // namespace corral::runtime
