// User and group ids: the child becomes plan.uid/plan.gid with no supplementary groups.
#include <grp.h>
#include <unistd.h>

#include <cerrno>

#include "jail/hardening.h"
#include "jail/setup_record.h"

namespace corral::jail {

bool SwitchIds(const JailPlan& plan, int report_fd) {
  // Groups first: after setresuid we would no longer have CAP_SETGID.
  if (::setgroups(0, nullptr) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kIds, errno, "setgroups(0)");
    return false;
  }
  if (::setresgid(plan.gid, plan.gid, plan.gid) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kIds, errno, "setresgid");
    return false;
  }
  if (::setresuid(plan.uid, plan.uid, plan.uid) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kIds, errno, "setresuid");
    return false;
  }
  return true;
}

}  // namespace corral::jail
