// Capabilities: the child drops every capability from every set.
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "jail/hardening.h"
#include "jail/setup_record.h"

namespace corral::jail {

// Highest capability number the running kernel knows. /proc/sys/kernel/cap_last_cap would
// need a file read; probing PR_CAPBSET_READ is one cheap syscall per capability.
int LastCap() {
  int last = CAP_LAST_CAP;
  while (::prctl(PR_CAPBSET_READ, last + 1, 0, 0, 0) >= 0) ++last;
  while (last > 0 && ::prctl(PR_CAPBSET_READ, last, 0, 0, 0) < 0) --last;
  return last;
}

bool LockSecurebitsAndDropBounding(int report_fd) {
  // NOROOT: uid 0 gains no capabilities on execve (matters with unsafe.allow_root).
  // NO_CAP_AMBIENT_RAISE: the ambient set stays empty. KEEP_CAPS stays off, and all are
  // locked so the command cannot change them back. NO_SETUID_FIXUP stays *off*: the kernel
  // must clear permitted/effective caps when we switch away from uid 0.
  unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
                       SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                       SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kCapabilities, errno, "set securebits");
    return false;
  }
  int last = LastCap();
  for (int cap = 0; cap <= last; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      ReportSetupFailure(report_fd, SetupStep::kCapabilities, errno,
                         "drop capability from bounding set");
      return false;
    }
  }
  return true;
}

bool ClearCapabilities(int report_fd) {
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kCapabilities, errno, "clear ambient capabilities");
    return false;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kCapabilities, errno, "clear capability sets");
    return false;
  }
  return true;
}

}  // namespace corral::jail
