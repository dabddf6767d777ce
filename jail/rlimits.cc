// Resource limits. The planner has already clamped every value to the current hard limit
// (raising one needs CAP_SYS_RESOURCE, which this host's bounding set lacks), so these
// calls only ever lower.
#include <sys/resource.h>

#include <cerrno>

#include "jail/child_text.h"
#include "jail/hardening.h"
#include "jail/setup_record.h"

namespace corral::jail {

bool ApplyRlimits(const JailPlan& plan, int report_fd) {
  for (const auto& [resource, limit] : plan.rlimits) {
    if (::setrlimit(static_cast<__rlimit_resource>(resource), &limit) != 0) {
      char what[64];
      ChildText(what, sizeof what).Add("setrlimit resource ").Add(static_cast<long>(resource));
      ReportSetupFailure(report_fd, SetupStep::kRlimits, errno, what);
      return false;
    }
  }
  return true;
}

}  // namespace corral::jail
