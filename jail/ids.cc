// User and group ids: the child becomes plan.uid/plan.gid with no supplementary groups.
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "jail/hardening.h"
#include "jail/setup_record.h"

namespace corral::jail {

// Raw syscalls, not glibc's setgroups/setresgid/setresuid: those wrappers apply the change
// to every thread glibc thinks the process has (the "setxid broadcast") and wait for each
// to acknowledge. A jail child is cloned with a raw clone3 from a parent that may have
// other threads (the attach warm-up thread, a daemon's workers), so glibc's thread list
// still names threads the child does not have, and the wrapper would wait forever. The
// child has one thread; the kernel's per-thread credentials are exactly what we want.
bool SwitchIds(const JailPlan& plan, int report_fd) {
  // Groups first: after setresuid we would no longer have CAP_SETGID. In a user namespace
  // whose setgroups is "deny" (an unprivileged caller's single-id map) the kernel refuses
  // setgroups outright; the command then keeps the caller's supplementary groups (shown as
  // the overflow gid, 65534), as with bwrap --unshare-user.
  if (!plan.user_ns.deny_setgroups && ::syscall(SYS_setgroups, 0, nullptr) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kIds, errno, "setgroups(0)");
    return false;
  }
  if (::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kIds, errno, "setresgid");
    return false;
  }
  if (::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kIds, errno, "setresuid");
    return false;
  }
  return true;
}

}  // namespace corral::jail
