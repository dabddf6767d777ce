// An OCI container's own child steps (jail/container.h). Syscalls only.
#include "jail/container.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "jail/child_text.h"
#include "jail/hardening.h"
#include "jail/mounts.h"
#include "jail/setup_record.h"

namespace corral::jail {

namespace {

bool ContainerStepFailed(int report_fd, SetupStep step, const char* what) {
  ReportSetupFailure(report_fd, step, errno, what);
  return false;
}

bool HasCap(uint64_t mask, int cap) { return cap < 64 && (mask >> cap & 1) != 0; }

// Bounding set first (needs CAP_SETPCAP, which the id change may take away), then ids
// with PR_SET_KEEPCAPS so that a non-root uid keeps its permitted set, then the sets.
bool SetContainerCapabilities(const JailPlan& plan, int report_fd) {
  const ContainerIdentity& id = plan.container_identity;
  const int last = LastCap();
  for (int cap = 0; cap <= last; ++cap) {
    if (!HasCap(id.bounding, cap) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 &&
        errno != EINVAL) {
      return ContainerStepFailed(report_fd, SetupStep::kCapabilities, "drop from bounding set");
    }
  }
  if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kCapabilities, "PR_SET_KEEPCAPS");
  }
  if (::syscall(SYS_setgroups, id.groups.size(), id.groups.data()) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kIds, "setgroups");
  }
  if (::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kIds, "setresgid");
  }
  if (::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kIds, "setresuid");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  for (int i = 0; i < 2; ++i) {
    data[i].effective = static_cast<uint32_t>(id.effective >> (32 * i));
    data[i].permitted = static_cast<uint32_t>(id.permitted >> (32 * i));
    data[i].inheritable = static_cast<uint32_t>(id.inheritable >> (32 * i));
  }
  if (::syscall(SYS_capset, &header, data) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kCapabilities, "capset");
  }
  if (::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0 ||
      ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kCapabilities, "clear ambient set");
  }
  for (int cap = 0; cap <= last; ++cap) {
    if (HasCap(id.ambient, cap) && ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) {
      return ContainerStepFailed(report_fd, SetupStep::kCapabilities, "raise ambient capability");
    }
  }
  return true;
}

}  // namespace

bool JoinNamespaces(const JailPlan& plan, int report_fd) {
  for (const auto& [fd, type] : plan.join_namespaces) {
    if (::setns(fd, type) != 0) {
      char what[64];
      ChildText(what, sizeof what).Add("setns type ").Add(static_cast<long>(type));
      return ContainerStepFailed(report_fd, SetupStep::kEnter, what);
    }
  }
  return true;
}

bool WriteSysctls(const JailPlan& plan, int report_fd) {
  for (const auto& [path, value] : plan.sysctls) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    bool ok = fd >= 0 && WriteWholeString(fd, value);
    int err = errno;
    if (fd >= 0) ::close(fd);
    if (!ok) {
      errno = err;
      char what[512];
      ChildText(what, sizeof what).Add("write sysctl ").Add(path.c_str());
      return ContainerStepFailed(report_fd, SetupStep::kMount, what);
    }
  }
  return true;
}

bool TakeConsole(const JailPlan& plan, int report_fd) {
  if (plan.console_socket_fd < 0) return true;
  if (::setsid() < 0) return ContainerStepFailed(report_fd, SetupStep::kStdio, "setsid");
  int master = ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) {
    return ContainerStepFailed(report_fd, SetupStep::kStdio, "open /dev/ptmx (the container's)");
  }
  int unlock = 0;
  if (::ioctl(master, TIOCSPTLCK, &unlock) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kStdio, "unlock the pty");
  }
  if (plan.console_rows > 0 && plan.console_cols > 0) {
    winsize size{plan.console_rows, plan.console_cols, 0, 0};
    if (::ioctl(master, TIOCSWINSZ, &size) != 0) {
      return ContainerStepFailed(report_fd, SetupStep::kStdio, "set the console size");
    }
  }
  int slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) return ContainerStepFailed(report_fd, SetupStep::kStdio, "open the pty's slave");
  if (::fchown(slave, plan.uid, plan.gid) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kStdio, "chown the pty's slave");
  }
  // The payload is the console's name, which runc's receivers read as the file's name.
  static constexpr char kConsoleName[] = "/dev/console";
  if (!SendFdWithPayload(plan.console_socket_fd, master, kConsoleName, sizeof kConsoleName - 1)) {
    return ContainerStepFailed(report_fd, SetupStep::kStdio, "send the pty on the console socket");
  }
  ::close(master);
  ::close(plan.console_socket_fd);
  for (int fd = 0; fd <= 2; ++fd) {
    if (::dup2(slave, fd) < 0) return ContainerStepFailed(report_fd, SetupStep::kStdio, "dup2 pty");
  }
  ::close(slave);
  if (::ioctl(0, TIOCSCTTY, 0) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kStdio, "make the pty the controlling tty");
  }
  return true;
}

int AwaitStartGate(const JailPlan& plan, int setup_fd) {
  if (plan.start_gate_fd < 0) return setup_fd;
  ::close(setup_fd);
  int conn;
  do {
    conn = ::accept4(plan.start_gate_fd, nullptr, nullptr, SOCK_CLOEXEC);
  } while (conn < 0 && errno == EINTR);
  ::close(plan.start_gate_fd);
  return conn;
}

bool HardenContainerIdentity(const JailPlan& plan, int report_fd, bool* seccomp_installed) {
  *seccomp_installed = false;
  ResetSignals();
  if (plan.console_socket_fd < 0 && ::setsid() < 0 && errno != EPERM) {
    return ContainerStepFailed(report_fd, SetupStep::kIds, "setsid");
  }
  if (!ApplyRlimits(plan, report_fd)) return false;
  const ContainerIdentity& id = plan.container_identity;
  if (!id.no_new_privs && !plan.seccomp.empty()) {
    int err = InstallSeccomp(plan.seccomp);
    if (err != 0) {
      errno = err;
      return ContainerStepFailed(report_fd, SetupStep::kSeccomp, "install seccomp filter");
    }
    *seccomp_installed = true;
  }
  if (!SetContainerCapabilities(plan, report_fd)) return false;
  if (id.no_new_privs && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ContainerStepFailed(report_fd, SetupStep::kNoNewPrivs, "PR_SET_NO_NEW_PRIVS");
  }
  if (id.umask >= 0) ::umask(static_cast<mode_t>(id.umask));
  return true;
}

void ExecContainerCommand(const JailPlan& plan, int report_fd) {
  bool seccomp_installed = false;
  if (TakeConsole(plan, report_fd) &&
      HardenContainerIdentity(plan, report_fd, &seccomp_installed)) {
    ExecHardened(plan, report_fd, nullptr, seccomp_installed);
  }
}

}  // namespace corral::jail
