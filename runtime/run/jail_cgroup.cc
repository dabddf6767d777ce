#include "runtime/run/jail_cgroup.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "runtime/run/user_cgroup.h"

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
  options.driver = std::string(Name(cgroups.driver));  // the cgroups library's spelling
  options.parent = cgroups.parent;
  return options;
}

Result<CgroupParent> OpenCgroupParent(const JailSpec& spec) {
  CgroupParent parent;
  cgroups::ManagerOptions options = ManagerOptionsFor(spec.cgroups);
  if (::geteuid() != 0) {
    // Not root: a delegated cgroup v2 subtree, or no cgroup at all (runtime/run/user_cgroup.h).
    auto user_parent = PrepareUserCgroupParent(spec);
    if (!user_parent) {
      const std::string why = user_parent.error().message();
      if (!spec.unsafe.allow_missing_limits) {
        return Error(ErrorCode::kUnsupported, MissingLimitsRefusal(spec, why));
      }
      parent.warnings.push_back(MissingLimitsWarning(spec, why));
      return parent;
    }
    if (spec.cgroups.parent == CgroupSpec().parent) options.parent = *user_parent;
  }
  // One-shot runs (and a pool's prepared jails) in a parent of their own: the scan for the
  // cgroups of crashed runs below reads only theirs, never the thousands of sandboxes'.
  options.parent += std::string("/") + kOneShotParent;
  auto manager = cgroups::CgroupManager::Create(options);
  if (!manager) {
    if (!spec.unsafe.allow_missing_limits) {
      return manager.error().WithContext(
          "cannot enforce memory/cpu/pids limits (set unsafe.allow_missing_limits to run "
          "without them)");
    }
    parent.warnings.push_back("running WITHOUT cgroup limits: " + manager.error().message());
    return parent;
  }
  parent.manager = std::move(*manager);
  if (auto reaped = parent.manager->ReapOrphans(); reaped && !reaped->empty()) {
    spdlog::info("removed {} cgroup(s) left by crashed corral runs", reaped->size());
  }
  return parent;
}

Result<JailCgroup> CreateJailCgroup(const JailSpec& spec, const CgroupParent& parent) {
  JailCgroup result;
  result.warnings = parent.warnings;
  if (!parent.manager) return result;
  result.manager = parent.manager;
  auto cgroup = result.manager->CreateCgroup(cgroups::CgroupManager::OneShotName());
  if (!cgroup) return cgroup.error().WithContext("creating the run's cgroup");
  result.cgroup = std::move(*cgroup);
  bool allow_missing = spec.unsafe.allow_missing_limits;
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

Result<JailCgroup> CreateJailCgroup(const JailSpec& spec) {
  ASSIGN_OR_RETURN(CgroupParent parent, OpenCgroupParent(spec));
  return CreateJailCgroup(spec, parent);
}

}  // namespace corral::runtime
