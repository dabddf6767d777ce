#include "runtime/host/host_info.h"

#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "base/files.h"
#include "jail/user_ns.h"
#include "runtime/net/netproxy_launch.h"

namespace corral::runtime {
namespace {

constexpr uid_t kNobody = 65534;

// Runs `probe(arg)` in a forked child and returns what it returned (0 or an errno), or
// minus the signal number if the child was killed. The child makes raw syscalls only:
// the parent may have other threads whose locks were copied mid-use.
int RunInChild(int (*probe)(unsigned long), unsigned long arg) {
  const pid_t pid = ::fork();
  if (pid < 0) return errno;
  if (pid == 0) ::_exit(probe(arg) & 0xff);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errno;
  }
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WEXITSTATUS(status);
}

int UnshareProbe(unsigned long flag) { return ::syscall(SYS_unshare, flag) == 0 ? 0 : errno; }

// As the test of an unprivileged user would see it: drop every id (and with them every
// capability) to nobody first when we are root.
int UnprivilegedUserNsProbe(unsigned long drop_ids) {
  if (drop_ids) {
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
    if (::syscall(SYS_setresgid, kNobody, kNobody, kNobody) != 0) return errno;
    if (::syscall(SYS_setresuid, kNobody, kNobody, kNobody) != 0) return errno;
  }
  return ::syscall(SYS_unshare, CLONE_NEWUSER) == 0 ? 0 : errno;
}

// A NULL filter makes the kernel fail the copy from user memory: EFAULT means filter mode
// is compiled in (it got that far), EINVAL means it is not. Nothing is installed either way,
// but a child keeps even a surprising success away from us.
int SeccompFilterProbe(unsigned long) {
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, nullptr, 0, 0) == 0) return 0;
  return errno == EFAULT ? 0 : errno;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<int64_t> ReadSysctl(const std::string& path) {
  Result<long long> v = ReadInt(path);
  if (!v) return std::nullopt;
  return *v;
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A syscall probed with arguments it must reject: present unless ENOSYS. A probe that
// somehow succeeds with a new fd gets it closed.
bool SyscallPresent(long result) {
  if (result >= 0) {
    ::close(static_cast<int>(result));
    return true;
  }
  return errno != ENOSYS;
}

SyscallSupport ProbeSyscalls() {
  SyscallSupport s;
#ifdef SYS_clone3
  s.clone3 = SyscallPresent(::syscall(SYS_clone3, nullptr, 0));  // size 0: EINVAL
#endif
#ifdef SYS_pidfd_open
  s.pidfd_open = SyscallPresent(::syscall(SYS_pidfd_open, 0, 0));  // pid 0: EINVAL
#endif
#ifdef SYS_close_range
  s.close_range = ::syscall(SYS_close_range, ~0u, 0u, 0u) == 0 || errno != ENOSYS;  // first>last
#endif
#ifdef SYS_open_tree
  s.open_tree = SyscallPresent(::syscall(SYS_open_tree, -1, "", ~0u));  // bad flags: EINVAL
#endif
#ifdef SYS_mount_setattr
  s.mount_setattr = ::syscall(SYS_mount_setattr, -1, "", ~0u, nullptr, 0) == 0 || errno != ENOSYS;
#endif
  return s;
}

void ProbeNamespaces(HostInfo& info) {
  static constexpr struct {
    const char* name;
    unsigned long flag;
  } kNamespaces[] = {
      {"pid", CLONE_NEWPID},   {"mnt", CLONE_NEWNS},    {"uts", CLONE_NEWUTS},
      {"ipc", CLONE_NEWIPC},   {"net", CLONE_NEWNET},   {"cgroup", CLONE_NEWCGROUP},
      {"user", CLONE_NEWUSER}, {"time", CLONE_NEWTIME},
  };
  for (const auto& ns : kNamespaces) {
    NamespaceSupport support;
    support.name = ns.name;
    support.present = Exists(std::string("/proc/self/ns/") + ns.name);
    // Without root, namespaces other than user can only be made inside a new user
    // namespace, which is how an unprivileged jail would get them.
    support.with_user_namespace = !info.is_root && ns.flag != CLONE_NEWUSER;
    support.unshare_errno =
        RunInChild(UnshareProbe, ns.flag | (support.with_user_namespace ? CLONE_NEWUSER : 0));
    support.unshare_ok = support.unshare_errno == 0;
    info.namespaces.push_back(support);
  }
  info.unprivileged_userns_clone = ReadSysctl("/proc/sys/kernel/unprivileged_userns_clone");
  info.max_user_namespaces = ReadSysctl("/proc/sys/user/max_user_namespaces");
  info.unprivileged_userns_errno = RunInChild(UnprivilegedUserNsProbe, info.is_root ? 1 : 0);
  info.unprivileged_userns_ok = info.unprivileged_userns_errno == 0;
}

bool HasAll(const std::vector<std::string>& have, const std::vector<std::string>& want,
            std::vector<std::string>* missing) {
  for (const std::string& w : want) {
    if (std::find(have.begin(), have.end(), w) == have.end()) missing->push_back(w);
  }
  return missing->empty();
}

// Detect() already resolved "auto"; what is listed here is for the report: which of the
// controllers corral's limits need are missing from the hierarchy the host leans on.
void ChooseCgroupDriver(CgroupSupport& cg) {
  const cgroups::HierarchyInfo& h = *cg.hierarchies;
  cg.auto_driver = h.driver;
  cg.auto_error = h.unusable_reason;
  if (h.driver) return;
  std::vector<std::string> v1_names;
  for (const auto& [controller, mount] : h.v1_mounts) v1_names.push_back(controller);
  if (!h.v1_mounts.empty()) {
    HasAll(v1_names, {"memory", "cpu", "pids", "freezer"}, &cg.missing_controllers);
  } else {
    HasAll(h.v2_controllers, {"memory", "cpu", "pids"}, &cg.missing_controllers);
  }
}

void ProbeCgroups(HostInfo& info, bool clone3) {
  CgroupSupport& cg = info.cgroups;
  Result<cgroups::HierarchyInfo> detected = cgroups::Detect(cgroups::ManagerOptions{});
  if (!detected) {
    cg.detect_error = detected.error().message();
    return;
  }
  cg.hierarchies = *detected;
  ChooseCgroupDriver(cg);
  std::vector<std::string> roots;
  for (const auto& [controller, mount] : detected->v1_mounts) {
    if (controller == "memory") cg.v1_memsw = Exists(mount + "/memory.memsw.limit_in_bytes");
    if (cg.auto_driver == cgroups::Driver::kV1 &&
        (controller == "memory" || controller == "cpu" || controller == "pids")) {
      roots.push_back(mount);
    }
  }
  if (cg.auto_driver == cgroups::Driver::kV2) roots.push_back(detected->v2_mount);
  cg.writable = !roots.empty() && std::all_of(roots.begin(), roots.end(), [](const auto& r) {
    return ::access(r.c_str(), W_OK) == 0;
  });
  cg.clone_into_cgroup =
      cg.auto_driver == cgroups::Driver::kV2 && detected->clone_into_cgroup && clone3;
  if (Result<std::string> expedited = ReadFile("/sys/kernel/rcu_expedited")) {
    cg.rcu_expedited = !expedited->empty() && (*expedited)[0] != '0';
  }
  if (::geteuid() != 0) {
    Result<std::string> self = ReadFile("/proc/self/cgroup");
    cg.delegated = cgroups::FindDelegatedCgroup(*detected, self ? *self : "", ::geteuid());
  }
}

// A usable "name:start:count" line of the caller's, by name or by uid (jail/user_ns.h).
bool HasSubordinateRange(const char* file, const std::string& user, uid_t uid) {
  Result<std::string> text = ReadFile(file);
  return text && jail::FindSubordinateRange(*text, user, uid).has_value();
}

void ProbeRootlessIds(HostInfo& info) {
  passwd pw;
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(info.euid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    info.rootless_ids.user = pw.pw_name;
  }
  info.rootless_ids.subid_ranges =
      HasSubordinateRange("/etc/subuid", info.rootless_ids.user, info.euid) &&
      HasSubordinateRange("/etc/subgid", info.rootless_ids.user, info.euid);
  info.rootless_ids.uidmap_helpers =
      ::access("/usr/bin/newuidmap", X_OK) == 0 && ::access("/usr/bin/newgidmap", X_OK) == 0;
}

bool EffectiveCap(int cap) {
  Result<std::string> status = ReadFile("/proc/self/status");
  if (!status) return false;
  const size_t at = status->find("CapEff:");
  if (at == std::string::npos) return false;
  const unsigned long long mask = std::strtoull(status->c_str() + at + 7, nullptr, 16);
  return (mask >> cap) & 1;
}

void ProbeSecurity(HostInfo& info) {
  info.seccomp_filter = RunInChild(SeccompFilterProbe, 0) == 0;
  if (Result<std::string> actions = ReadFile("/proc/sys/kernel/seccomp/actions_avail")) {
    info.seccomp_actions = Words(*actions);
  }
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  info.landlock_abi = abi > 0 ? static_cast<int>(abi) : 0;
  info.landlock_errno = abi > 0 ? 0 : errno;
  info.no_new_privs = ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
  info.cap_sys_resource = ::prctl(PR_CAPBSET_READ, CAP_SYS_RESOURCE, 0, 0, 0) == 1;
  info.cap_sys_admin = EffectiveCap(CAP_SYS_ADMIN);
}

}  // namespace

const NamespaceSupport* HostInfo::FindNamespace(const std::string& name) const {
  for (const NamespaceSupport& ns : namespaces) {
    if (ns.name == name) return &ns;
  }
  return nullptr;
}

bool HostInfo::HasSeccompAction(const std::string& action) const {
  return std::find(seccomp_actions.begin(), seccomp_actions.end(), action) != seccomp_actions.end();
}

std::string ErrnoText(int err) {
  if (err < 0) return "killed by signal " + std::to_string(-err);
  const char* name = ::strerrorname_np(err);
  return std::string(name ? name : "errno " + std::to_string(err)) + " (" + std::strerror(err) +
         ")";
}

Result<HostInfo> ProbeHost() {
  HostInfo info;
  struct utsname uts;
  if (::uname(&uts) != 0) return Error::FromErrno(errno, "uname");
  info.kernel_release = uts.release;
  info.machine = uts.machine;
  info.euid = ::geteuid();
  info.is_root = info.euid == 0;
  info.online_cpus = ::sysconf(_SC_NPROCESSORS_ONLN);

  ProbeNamespaces(info);
  ProbeSecurity(info);
  info.syscalls = ProbeSyscalls();
  ProbeCgroups(info, info.syscalls.clone3);
  if (!info.is_root) ProbeRootlessIds(info);
  if (Result<std::string> fs = ReadFile("/proc/filesystems")) {
    const std::vector<std::string> words = Words(*fs);
    info.overlayfs = std::find(words.begin(), words.end(), "overlay") != words.end();
  }
  if (Result<std::string> swaps = ReadFile("/proc/swaps")) {
    info.swap_enabled = std::count(swaps->begin(), swaps->end(), '\n') > 1;
  }
  if (Result<std::string> proxy = net::FindNetproxyProgram()) {
    info.netproxy_path = *proxy;
  } else {
    info.netproxy_error = proxy.error().message();
  }
  return info;
}

}  // namespace corral::runtime
