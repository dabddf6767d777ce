// HostInfo: the kernel and host facts corral depends on, probed once per process by
// ProbeHost() and then only read (by the planner, `corral check`, the daemon). Host facts
// are never written back into a JailSpec.
//
// ProbeHost runs in the parent. Some probes fork a short-lived child (to try unshare(2)
// or to drop to an unprivileged uid); each child is reaped before ProbeHost returns, and
// namespaces it created die with it. Call it before starting threads where possible.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "cgroups/cgroup.h"

namespace corral::runtime {

struct NamespaceSupport {
  std::string name;         // "pid", "mnt", "uts", "ipc", "net", "cgroup", "user", "time"
  bool present = false;     // /proc/self/ns/<name> exists
  bool unshare_ok = false;  // unshare(CLONE_NEW*) worked in a forked child
  int unshare_errno = 0;    // why it did not (0 if it did)
  // Not root: probed as unshare(CLONE_NEWUSER | CLONE_NEW*), the way an unprivileged
  // jail would create it.
  bool with_user_namespace = false;
};

// Newer syscalls, probed with invalid arguments: only ENOSYS counts as missing.
struct SyscallSupport {
  bool clone3 = false;
  bool pidfd_open = false;
  bool close_range = false;
  bool open_tree = false;
  bool mount_setattr = false;
};

struct CgroupSupport {
  std::optional<cgroups::HierarchyInfo> hierarchies;  // cgroups::Detect(ManagerOptions{})
  std::string detect_error;                           // set when Detect failed
  // The driver "auto" resolves to (hierarchies->driver), or why none works.
  std::optional<cgroups::Driver> auto_driver;
  std::string auto_error;
  // When no driver works: what the host's hierarchy lacks among memory, cpu, pids (and
  // freezer, which the v1 driver needs to kill reliably).
  std::vector<std::string> missing_controllers;
  bool v1_memsw = false;           // v1 memory.memsw.limit_in_bytes (swap accounting) exists
  bool writable = false;           // we may create cgroups in the hierarchies the driver uses
  bool clone_into_cgroup = false;  // clone3(CLONE_INTO_CGROUP) usable with that driver
  // /sys/kernel/rcu_expedited: without CLONE_INTO_CGROUP every join of a cgroup waits for
  // an RCU grace period, which this setting shortens host-wide. nullopt: unreadable.
  std::optional<bool> rcu_expedited;
  // Not root: the delegated cgroup v2 subtree this process runs in, or why there is none
  // (cgroups::FindDelegatedCgroup); a rootless jail's limits need one.
  std::optional<cgroups::DelegatedCgroup> delegated;
};

// Not root: how a rootless jail's ids can be mapped (runtime/run/user_ns_plan.h).
struct RootlessIds {
  std::string user;             // the caller's name ("" if it has none)
  bool subid_ranges = false;    // ranges for it in both /etc/subuid and /etc/subgid
  bool uidmap_helpers = false;  // /usr/bin/newuidmap and newgidmap (Debian's uidmap)
};

// Who the checked spec's uid/gid would be on the host (runtime/run/identity.h). Not
// probed by ProbeHost (it depends on the spec): `corral check` fills it in.
struct IdentityCheck {
  std::string mode;  // reserved | host-uid | rootless; "" when refused
  uint32_t host_uid = 0, host_gid = 0;
  std::string note;   // why host-uid under auto
  std::string error;  // why a run is refused (an overlapping range, reserved without one)
};

struct HostInfo {
  std::string kernel_release;  // uname -r
  std::string machine;         // uname -m
  uid_t euid = 0;
  bool is_root = false;  // euid 0
  long online_cpus = 0;

  std::vector<NamespaceSupport> namespaces;  // in the order listed above
  const NamespaceSupport* FindNamespace(const std::string& name) const;

  // Unprivileged user namespaces. The sysctls are unset when the file does not exist
  // (unprivileged_userns_clone is a Debian/Ubuntu patch).
  std::optional<int64_t> unprivileged_userns_clone;
  std::optional<int64_t> max_user_namespaces;
  RootlessIds rootless_ids;  // probed when not root
  std::optional<IdentityCheck> identity;
  bool unprivileged_userns_ok = false;  // a child at uid/gid 65534 could unshare(CLONE_NEWUSER)
  int unprivileged_userns_errno = 0;

  bool seccomp_filter = false;               // SECCOMP_MODE_FILTER is compiled in
  std::vector<std::string> seccomp_actions;  // /proc/sys/kernel/seccomp/actions_avail
  bool HasSeccompAction(const std::string& action) const;

  int landlock_abi = 0;    // 0 = no Landlock
  int landlock_errno = 0;  // ENOSYS: not built; EOPNOTSUPP: built but disabled at boot

  CgroupSupport cgroups;
  bool overlayfs = false;  // "overlay" in /proc/filesystems
  SyscallSupport syscalls;

  bool no_new_privs = false;         // PR_GET_NO_NEW_PRIVS works
  bool cap_sys_resource = false;     // CAP_SYS_RESOURCE in our bounding set
  bool cap_sys_admin = false;        // CAP_SYS_ADMIN in our effective set
  std::optional<bool> swap_enabled;  // any entry in /proc/swaps

  // corral-netproxy, which network.mode allowlist needs (runtime/net/netproxy_launch.h):
  // its path, or why it was not accepted.
  std::string netproxy_path;
  std::string netproxy_error;
};

// Probes everything above. Individual probe failures are recorded in the fields; an
// error is returned only if the host cannot be identified at all (uname fails).
Result<HostInfo> ProbeHost();

// Short description of an errno value for reports: "EPERM (Operation not permitted)".
std::string ErrnoText(int err);

}  // namespace corral::runtime
