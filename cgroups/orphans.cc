#include "base/result.h"
#include "cgroups/internal.h"
#include "cgroups/manager_base.h"

namespace corral::cgroups::internal {

Result<std::vector<std::string>> ManagerBase::ReapOrphans() {
  ASSIGN_OR_RETURN(auto names, ListCgroups());
  std::function<bool(pid_t)> live =
      options_.is_live_corral ? options_.is_live_corral : IsLiveCorral;
  std::vector<std::string> removed;
  std::string failures;
  // One stuck leftover must not keep the others around: try all, then report.
  for (const auto& name : SelectOrphans(names, live)) {
    auto cg = OpenForCleanup(name);
    Status done = cg ? (*cg)->Destroy() : Status(cg.error());
    if (done) {
      removed.push_back(name);
    } else {
      failures += (failures.empty() ? "" : "; ") + name + ": " + done.error().message();
    }
  }
  if (!failures.empty()) {
    return Error(ErrorCode::kIo, "removing orphaned cgroups (" + std::to_string(removed.size()) +
                                     " removed): " + failures);
  }
  return removed;
}

Status ManagerBase::RemoveLeftover(const std::string& name) {
  auto cg = OpenForCleanup(name);
  if (!cg) return cg.error().code() == ErrorCode::kNotFound ? Ok() : Status(cg.error());
  return (*cg)->Destroy();
}

}  // namespace corral::cgroups::internal
