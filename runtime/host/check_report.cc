#include "runtime/host/check_report.h"

#include <algorithm>
#include <cstdio>

#include "jail/landlock.h"  // its constants only
#include "runtime/net/in_jail.h"
#include "runtime/spec/sizes.h"

namespace corral::runtime {
namespace {

// Namespaces a JailSpec can turn off, with the opt-out that does it.
constexpr struct {
  const char* name;
  bool NamespaceSpec::*enabled;
  const char* opt_out;
} kOptionalNamespaces[] = {
    {"pid", &NamespaceSpec::pid, "namespaces.pid: false"},
    {"uts", &NamespaceSpec::uts, "namespaces.uts: false"},
    {"ipc", &NamespaceSpec::ipc, "namespaces.ipc: false"},
    {"net", &NamespaceSpec::net, "namespaces.net: false with unsafe.host_network: true"},
    {"cgroup", &NamespaceSpec::cgroup, "namespaces.cgroup: false"},
};

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<std::string> V1Controllers(const HostInfo& host) {
  std::vector<std::string> names;
  if (!host.cgroups.hierarchies) return names;
  for (const auto& [controller, mount] : host.cgroups.hierarchies->v1_mounts) {
    names.push_back(controller);
  }
  return names;
}

// "hybrid (v1 controllers: memory cpu ...; v2 has none) -> driver v1"
std::string CgroupSummary(const HostInfo& host) {
  const CgroupSupport& cg = host.cgroups;
  if (!cg.hierarchies) return "cgroups: not detected (" + cg.detect_error + ")";
  const cgroups::HierarchyInfo& h = *cg.hierarchies;
  const std::vector<std::string> v1 = V1Controllers(host);
  const std::string v2 = h.v2_controllers.empty() ? "none" : Join(h.v2_controllers, " ");
  std::string layout;
  if (h.v2_mounted && !v1.empty()) {
    layout = "hybrid (v1 controllers: " + Join(v1, " ") + "; v2 has " + v2 + ")";
  } else if (h.v2_mounted) {
    layout = "unified v2 at " + h.v2_mount + " (controllers: " + v2 + ")";
  } else if (!v1.empty()) {
    layout = "v1 only (controllers: " + Join(v1, " ") + ")";
  } else {
    layout = "none mounted";
  }
  return "cgroups: " + layout + " -> " +
         (cg.auto_driver ? std::string("driver ") + cgroups::DriverName(*cg.auto_driver)
                         : "no usable driver");
}

void AddNamespaceItems(const HostInfo& host, std::vector<CheckItem>& items) {
  for (const NamespaceSupport& ns : host.namespaces) {
    const std::string label =
        ns.name + " namespace" + (ns.with_user_namespace ? " (inside a user namespace)" : "");
    if (ns.unshare_ok) {
      items.push_back({"ok", label});
    } else if (!ns.present) {
      items.push_back({"MISSING", label + " (kernel built without it)"});
    } else {
      items.push_back({"MISSING", label + " (unshare: " + ErrnoText(ns.unshare_errno) + ")"});
    }
  }
  std::string sysctls;
  if (host.unprivileged_userns_clone) {
    sysctls += "unprivileged_userns_clone=" + std::to_string(*host.unprivileged_userns_clone);
  }
  if (host.max_user_namespaces) {
    sysctls += std::string(sysctls.empty() ? "" : ", ") +
               "max_user_namespaces=" + std::to_string(*host.max_user_namespaces);
  }
  const std::string detail = sysctls.empty() ? "" : "; " + sysctls;
  if (host.unprivileged_userns_ok) {
    items.push_back({"ok", "unprivileged user namespaces (tested as uid 65534" + detail + ")"});
  } else {
    items.push_back({host.is_root ? "info" : "MISSING",
                     "unprivileged user namespaces (" + ErrnoText(host.unprivileged_userns_errno) +
                         detail + "): only root can run jails"});
  }
}

void AddSecurityItems(const HostInfo& host, std::vector<CheckItem>& items) {
  const std::string actions =
      host.seccomp_actions.empty() ? "none listed" : Join(host.seccomp_actions, " ");
  items.push_back({host.seccomp_filter ? "ok" : "MISSING",
                   std::string("seccomp filters") +
                       (host.seccomp_filter ? "" : " (kernel without SECCOMP_FILTER)") +
                       " (actions: " + actions + ")"});
  items.push_back({host.no_new_privs ? "ok" : "MISSING", "no_new_privs"});
  if (host.landlock_abi > 0) {
    items.push_back({"ok", "landlock ABI " + std::to_string(host.landlock_abi)});
  } else if (host.landlock_errno == EOPNOTSUPP) {
    items.push_back({"MISSING", "landlock (built in but disabled at boot: add it to lsm=)"});
  } else {
    items.push_back({"MISSING", "landlock (kernel has no Landlock LSM)"});
  }
  items.push_back({host.cap_sys_resource ? "ok" : "info",
                   std::string("CAP_SYS_RESOURCE ") +
                       (host.cap_sys_resource ? "in the bounding set (rlimits may be raised)"
                                              : "not in the bounding set (rlimits can only be "
                                                "lowered below the current hard limits)")});
}

// What this (non-root) user can enforce: README.md "Running without root".
void AddRootlessItems(const HostInfo& host, std::vector<CheckItem>& items) {
  const RootlessIds& ids = host.rootless_ids;
  const std::string user = ids.user.empty() ? "uid " + std::to_string(host.euid) : ids.user;
  if (ids.subid_ranges && ids.uidmap_helpers) {
    items.push_back({"ok",
                     "rootless ids: the jail's uid 1000 is you, the rest of its ids "
                     "come from your /etc/subuid and /etc/subgid ranges (newuidmap)"});
  } else {
    items.push_back(
        {"info",
         "rootless ids: only the jail's uid 1000 is mapped (to you), setgroups is off "
         "in the jail: " +
             std::string(ids.uidmap_helpers ? "" : "install uidmap and ") +
             (ids.subid_ranges ? ""
                               : "add ranges for " + user + " to /etc/subuid and /etc/subgid ") +
             "for a full range"});
  }
  const std::optional<cgroups::DelegatedCgroup>& d = host.cgroups.delegated;
  if (d && d->dir) {
    items.push_back(
        {"ok", "rootless limits: memory, cpu and pids in the delegated cgroup " + *d->dir});
  } else {
    items.push_back(
        {"MISSING", "rootless limits: " + (d ? d->why_not : std::string("cgroups not detected")) +
                        " (runs are refused unless unsafe.allow_missing_limits)"});
  }
}

void AddCgroupItems(const HostInfo& host, std::vector<CheckItem>& items) {
  const CgroupSupport& cg = host.cgroups;
  items.push_back({"info", CgroupSummary(host)});
  if (!cg.auto_driver) {
    items.push_back(
        {"MISSING", "cgroup limits: " + (cg.auto_error.empty() ? cg.detect_error : cg.auto_error)});
    return;
  }
  const std::string driver = cgroups::DriverName(*cg.auto_driver);
  if (!host.is_root) {
    // The host's hierarchies are root's: what a non-root caller gets is the delegated
    // subtree, or nothing (the "rootless limits" line says which).
    items.push_back({"info", "the host's cgroup " + driver +
                                 " hierarchies are root's; for you, see \"rootless limits\""});
    return;
  }
  items.push_back({"ok", "memory, cpu and pids limits (cgroup " + driver + ")"});
  items.push_back(
      {cg.writable ? "ok" : "MISSING",
       std::string("cgroup hierarchies ") +
           (cg.writable ? "writable" : "not writable by us (need root or delegation)")});
  if (*cg.auto_driver == cgroups::Driver::kV1) {
    const bool swap_on = host.swap_enabled.value_or(true);
    items.push_back({cg.v1_memsw || !swap_on ? "ok" : "warn",
                     std::string("swap excluded from the memory limit") +
                         (cg.v1_memsw ? " (memory.memsw)"
                          : swap_on   ? ": swap is on but v1 swap accounting is off"
                                      : " (no swap on this host)")});
  }
  items.push_back({cg.clone_into_cgroup ? "ok" : "info",
                   cg.clone_into_cgroup
                       ? "CLONE_INTO_CGROUP"
                       : "CLONE_INTO_CGROUP unused (driver " + driver +
                             ": the child joins its cgroup through cgroup.procs)"});
  if (!cg.clone_into_cgroup && cg.rcu_expedited == false) {
    // Measured on our 2-core v1 host, idle between runs: corral run 21 -> 10 ms, corral
    // exec 16 -> 7 ms with rcu_expedited=1 (README, "cgroup v1 and v2").
    items.push_back({"info",
                     "each cgroup join waits for an RCU grace period (~10 ms on an idle host): "
                     "`corral pool` joins ahead of time; /sys/kernel/rcu_expedited=1 shortens "
                     "it host-wide (see README)"});
  }
}

void AddKernelItems(const HostInfo& host, std::vector<CheckItem>& items) {
  items.push_back({host.overlayfs ? "ok" : "MISSING", "overlayfs"});
  const std::pair<const char*, bool> syscalls[] = {
      {"clone3", host.syscalls.clone3},
      {"pidfd_open", host.syscalls.pidfd_open},
      {"close_range", host.syscalls.close_range},
      {"open_tree", host.syscalls.open_tree},
      {"mount_setattr", host.syscalls.mount_setattr},
  };
  for (const auto& [name, present] : syscalls) {
    items.push_back({present ? "ok" : "MISSING", std::string(name) + " syscall"});
  }
}

// The cgroup driver `requested` resolves to here, or nullopt with the reason.
std::optional<cgroups::Driver> DriverFor(const HostInfo& host, CgroupDriverChoice requested,
                                         std::string* why) {
  const CgroupSupport& cg = host.cgroups;
  if (!cg.hierarchies) {
    *why = "cgroups not detected: " + cg.detect_error;
    return std::nullopt;
  }
  switch (requested) {
    case CgroupDriverChoice::kAuto:
      if (!cg.auto_driver) *why = cg.auto_error;
      return cg.auto_driver;
    case CgroupDriverChoice::kV2:
      if (cg.hierarchies->v2_mounted) return cgroups::Driver::kV2;
      *why = "cgroups.driver v2: cgroup v2 is not mounted";
      return std::nullopt;
    case CgroupDriverChoice::kV1:
      if (Contains(V1Controllers(host), "freezer")) return cgroups::Driver::kV1;
      *why = "cgroups.driver v1: the freezer controller is not mounted";
      return std::nullopt;
  }
  return std::nullopt;
}

// Who the jail's ids are on the host (runtime/run/identity.h).
void EvaluateIdentity(const HostInfo& host, const JailSpec& spec, CheckVerdict& v) {
  if (!host.identity) return;
  const IdentityCheck& id = *host.identity;
  const std::string ids = "the jail's uid " + std::to_string(spec.uid) + "/gid " +
                          std::to_string(spec.gid) + " are host uid " +
                          std::to_string(id.host_uid) + "/gid " + std::to_string(id.host_gid);
  if (!id.error.empty()) {
    v.refusals.push_back("identity: " + id.error);
  } else if (id.mode == "reserved") {
    v.enforced.push_back("identity reserved: " + ids +
                         ", from corral's range in /etc/subuid and /etc/subgid (no account has "
                         "them; a user namespace maps them)");
  } else if (id.mode == "rootless") {
    v.enforced.push_back("identity rootless: " + ids);
  } else if (id.note.empty()) {
    v.warnings.push_back("identity host-uid: " + ids +
                         ": an account with those ids can signal the command and owns its files");
  } else {
    v.warnings.push_back("identity host-uid: " + ids + " (" + id.note +
                         "): an account with those ids can signal the command and owns its files");
  }
}

void EvaluateIsolation(const HostInfo& host, const JailSpec& spec, CheckVerdict& v) {
  const NamespaceSupport* mnt = host.FindNamespace("mnt");
  if (!mnt || !mnt->unshare_ok) {
    v.refusals.push_back("mount namespace unavailable: the fresh root needs it (no opt-out)");
  }
  std::vector<std::string> names = {"mnt"};
  for (const auto& ns : kOptionalNamespaces) {
    if (!(spec.namespaces.*ns.enabled)) continue;
    const NamespaceSupport* support = host.FindNamespace(ns.name);
    if (support && support->unshare_ok) {
      names.push_back(ns.name);
    } else {
      v.refusals.push_back(std::string(ns.name) + " namespace unavailable (opt-out: " + ns.opt_out +
                           ")");
    }
  }
  const char* network = spec.network.mode == NetworkMode::kAllowlist ? " (network: allow-list only)"
                                                                     : " (network: loopback only)";
  v.enforced.push_back("namespaces: " + Join(names, " ") + (Contains(names, "net") ? network : ""));
  if (!host.is_root && !host.unprivileged_userns_ok) {
    v.refusals.push_back("not root, and unprivileged user namespaces do not work here (" +
                         ErrnoText(host.unprivileged_userns_errno) + "): run as root");
  }
  if (!host.no_new_privs) v.refusals.push_back("no_new_privs unsupported (no opt-out)");
  v.enforced.push_back("uid " + std::to_string(spec.uid) + ", gid " + std::to_string(spec.gid) +
                       ", no capabilities, no_new_privs, fds beyond stdio closed");
  EvaluateIdentity(host, spec, v);
  if (spec.seccomp_profile == "unconfined") {
    v.warnings.push_back("seccomp: unconfined (no syscall filter)");
    return;
  }
  if (!host.seccomp_filter) {
    v.refusals.push_back(
        "seccomp filters unsupported (opt-out: seccomp.profile: unconfined with "
        "unsafe.allow_unconfined_seccomp: true)");
  } else if (!host.seccomp_actions.empty() &&
             (!host.HasSeccompAction("errno") || !host.HasSeccompAction("kill_process"))) {
    v.refusals.push_back("seccomp lacks the errno or kill_process action (actions: " +
                         Join(host.seccomp_actions, " ") + ")");
  } else {
    v.enforced.push_back("seccomp profile " + spec.seccomp_profile);
  }
}

// One line for a limit (or for all of them) that cannot be enforced.
void MissingLimit(const std::string& what, const std::string& why, bool allowed, CheckVerdict& v) {
  if (allowed) {
    v.warnings.push_back(what + " NOT enforced: " + why + " (unsafe.allow_missing_limits)");
  } else {
    v.refusals.push_back(what + " cannot be enforced: " + why +
                         "; refused unless unsafe.allow_missing_limits: true");
  }
}

void EvaluateCgroups(const HostInfo& host, const JailSpec& spec, CheckVerdict& v) {
  const LimitsSpec& l = spec.limits;
  const bool allow = spec.unsafe.allow_missing_limits;
  const std::pair<const char*, std::string> limits[] = {
      {"memory", "memory " + FormatSize(l.memory_bytes) + " (no swap)"},
      {"cpu", "cpus " + Number(l.cpus)},
      {"pids", "pids " + std::to_string(l.pids)},
  };
  std::string why;
  std::optional<cgroups::Driver> driver = DriverFor(host, spec.cgroups.driver, &why);
  if (!driver && why.empty()) why = "no usable cgroup driver";
  const std::optional<cgroups::DelegatedCgroup>& delegated = host.cgroups.delegated;
  if (!host.is_root && delegated) {
    // Not root: only a delegated v2 subtree (runtime/run/user_cgroup.h) will do.
    if (delegated->dir) {
      driver = cgroups::Driver::kV2;
      why.clear();
    } else {
      why = delegated->why_not +
            "; run corral under a delegated cgroup v2 subtree (`systemd-run --user --scope -p "
            "Delegate=yes corral ...`) on a cgroup v2 host, or as root";
    }
  } else if (driver && driver == host.cgroups.auto_driver && !host.cgroups.writable) {
    why = "the cgroup hierarchies are not writable by us (need root or a delegated subtree)";
  }
  if (!why.empty()) {
    MissingLimit("cgroup limits (" + limits[0].second + ", " + limits[1].second + ", " +
                     limits[2].second + ")",
                 why, allow, v);
    return;
  }
  const cgroups::HierarchyInfo& h = *host.cgroups.hierarchies;
  const std::vector<std::string>& available =
      *driver == cgroups::Driver::kV2 ? h.v2_controllers : V1Controllers(host);
  std::vector<std::string> applied;
  for (const auto& [controller, text] : limits) {
    if (Contains(available, controller)) {
      applied.push_back(text);
    } else {
      MissingLimit(
          text,
          std::string("no ") + controller + " controller in cgroup " + cgroups::DriverName(*driver),
          allow, v);
    }
  }
  if (!applied.empty()) {
    v.enforced.push_back(Join(applied, ", ") + " via cgroup " + cgroups::DriverName(*driver) +
                         (!host.is_root && delegated && delegated->dir
                              ? " (delegated: " + *delegated->dir + ")"
                              : std::string()));
  }
  if (driver == cgroups::Driver::kV1 && !host.cgroups.v1_memsw &&
      host.swap_enabled.value_or(true)) {
    v.warnings.push_back(
        "swap is on and v1 swap accounting is off: the memory limit does not "
        "cover swap (boot with swapaccount=1)");
  }
}

// "pypi.org, *.github.com:443 and 3 more"
std::string RuleList(const std::vector<std::string>& rules) {
  constexpr size_t kShown = 4;
  std::vector<std::string> shown(rules.begin(), rules.begin() + std::min(rules.size(), kShown));
  std::string out = Join(shown, ", ");
  if (rules.size() > kShown) out += " and " + std::to_string(rules.size() - kShown) + " more";
  return out;
}

void EvaluateNetwork(const HostInfo& host, const JailSpec& spec, CheckVerdict& v) {
  const NetworkSpec& n = spec.network;
  if (n.mode == NetworkMode::kHost) {
    v.warnings.push_back(
        "network: the host's own (network.mode host, unsafe.host_network): the command reaches "
        "everything the host reaches");
    return;
  }
  if (n.mode != NetworkMode::kAllowlist) return;
  if (host.netproxy_path.empty()) {
    v.refusals.push_back("network.mode allowlist: " + host.netproxy_error);
    return;
  }
  std::string rules = n.allow.empty() ? "nothing allowed" : "allow " + RuleList(n.allow);
  if (!n.deny.empty()) rules += "; deny " + RuleList(n.deny);
  v.enforced.push_back(
      "network: allow-list (" + rules + ") through " + host.netproxy_path + ": HTTP proxy " +
      net::kProxyHost + ":" + std::to_string(net::kHttpProxyPort) +
      ", SOCKS5 :" + std::to_string(net::kSocksPort) + ", DNS :" + std::to_string(net::kDnsPort) +
      " in the jail; " + std::to_string(n.max_connections) + " connections at once" +
      (n.max_bytes ? ", " + FormatSize(*n.max_bytes) + " in all" : "") +
      "; loopback, private, link-local and metadata addresses always refused");
}

void EvaluateAlwaysOn(const JailSpec& spec, CheckVerdict& v) {
  const LimitsSpec& l = spec.limits;
  if (l.timeout_seconds > 0) {
    v.enforced.push_back("wall clock " + Number(l.timeout_seconds) + " s (SIGTERM, SIGKILL " +
                         Number(l.kill_grace_seconds) + " s later)");
  } else {
    v.warnings.push_back("no wall-clock limit (limits.timeout: 0)");
  }
  std::string rlimits =
      "file size " + FormatSize(l.file_size_bytes) + ", open files " + std::to_string(l.open_files);
  if (l.cpu_time_seconds) rlimits += ", cpu time " + std::to_string(*l.cpu_time_seconds) + " s";
  v.enforced.push_back("rlimits: " + rlimits);
  v.enforced.push_back(std::string("root: ") +
                       (spec.rootfs ? "the rootfs " + *spec.rootfs
                                    : "read-only tmpfs with host system dirs bound read-only") +
                       "; /tmp a " + FormatSize(l.tmp_size_bytes) + " tmpfs");
  v.enforced.push_back("captured output capped at " + FormatSize(l.output_limit_bytes) +
                       " per stream");
}

// The TCP half of Landlock for `spec` on an ABI that has it (>= 4).
std::string LandlockTcpText(const JailSpec& spec, int abi) {
  if (!spec.landlock.tcp) return "TCP not fenced (landlock.tcp: false)";
  if (spec.network.mode == NetworkMode::kHost) return "TCP not fenced (network.mode: host)";
  if (spec.network.mode == NetworkMode::kNone) {
    return "TCP not fenced (network.mode: none: the jail's own loopback is all there is)";
  }
  if (abi < 4) return "TCP not fenced (needs Landlock ABI 4)";
  return "TCP: connect only to the in-jail proxy and resolver (ports 3128, 1080, 53) and "
         "the allow rules' ports, no bind";
}

void EvaluateLandlock(const HostInfo& host, const JailSpec& spec, CheckVerdict& v) {
  const int abi = host.landlock_abi;
  if (spec.landlock.enabled == LandlockMode::kOff) {
    v.warnings.push_back(
        "Landlock off (landlock.enabled: false): the mount namespace is the "
        "only filesystem fence");
    return;
  }
  if (abi < jail::landlock::kMinimumAbi) {
    const std::string why =
        abi == 1 ? "Landlock ABI 1 cannot allow renames across directories (needs ABI 2)"
                 : "no usable Landlock (" + ErrnoText(host.landlock_errno) + ")";
    // auto asks for Landlock only where the kernel has it: no warning then (the item
    // above already says MISSING).
    if (spec.landlock.enabled == LandlockMode::kOn) {
      v.refusals.push_back("landlock.enabled: true, but " + why +
                           " (opt-out: landlock.enabled: auto)");
    }
    return;
  }
  v.enforced.push_back("Landlock ABI " + std::to_string(abi) +
                       ": writes only beneath the jail's read-write mounts, reads and executes "
                       "only beneath its mounts; " +
                       LandlockTcpText(spec, abi));
}

std::string Bullets(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "  - " + line + "\n";
  return out;
}

nlohmann::json ErrnoJson(int err) {
  return err == 0 ? nlohmann::json(nullptr) : nlohmann::json(ErrnoText(err));
}

nlohmann::json CgroupJson(const CgroupSupport& cg) {
  nlohmann::json j = {{"detect_error", cg.detect_error.empty() ? nlohmann::json(nullptr)
                                                               : nlohmann::json(cg.detect_error)}};
  if (cg.hierarchies) {
    const cgroups::HierarchyInfo& h = *cg.hierarchies;
    nlohmann::json v1 = nlohmann::json::object();
    for (const auto& [controller, mount] : h.v1_mounts) v1[controller] = mount;
    j["v2_mount"] = h.v2_mounted ? nlohmann::json(h.v2_mount) : nlohmann::json(nullptr);
    j["v2_controllers"] = h.v2_controllers;
    j["v1_mounts"] = v1;
  }
  j["auto_driver"] = cg.auto_driver ? nlohmann::json(cgroups::DriverName(*cg.auto_driver))
                                    : nlohmann::json(nullptr);
  j["auto_error"] = cg.auto_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(cg.auto_error);
  j["missing_controllers"] = cg.missing_controllers;
  j["v1_memsw"] = cg.v1_memsw;
  j["writable"] = cg.writable;
  j["clone_into_cgroup"] = cg.clone_into_cgroup;
  if (cg.delegated) {
    j["delegated"] = {{"dir", cg.delegated->dir ? nlohmann::json(*cg.delegated->dir) : nullptr},
                      {"why_not", cg.delegated->dir ? nlohmann::json(nullptr)
                                                    : nlohmann::json(cg.delegated->why_not)}};
  }
  return j;
}

}  // namespace

std::vector<CheckItem> CheckItems(const HostInfo& host) {
  std::vector<CheckItem> items;
  items.push_back({host.is_root ? "ok" : "warn",
                   host.is_root ? "running as root"
                                : "not root (euid " + std::to_string(host.euid) +
                                      "): jails need user namespaces and a delegated cgroup"});
  AddNamespaceItems(host, items);
  AddSecurityItems(host, items);
  AddCgroupItems(host, items);
  if (!host.is_root) AddRootlessItems(host, items);
  AddKernelItems(host, items);
  return items;
}

CheckVerdict EvaluateHost(const HostInfo& host, const JailSpec& spec) {
  CheckVerdict v;
  EvaluateIsolation(host, spec, v);
  EvaluateCgroups(host, spec, v);
  EvaluateNetwork(host, spec, v);
  EvaluateLandlock(host, spec, v);
  EvaluateAlwaysOn(spec, v);
  v.can_run = v.refusals.empty();
  return v;
}

std::string FormatCheckReport(const HostInfo& host, const JailSpec& spec, const std::string& what) {
  std::string out = "corral check: Linux " + host.kernel_release + " (" + host.machine + "), " +
                    std::to_string(host.online_cpus) + " online CPUs\n\n";
  for (const CheckItem& item : CheckItems(host)) {
    // A six-wide status column; MISSING overflows it by one and keeps a space.
    std::string status = item.status;
    status.resize(std::max<size_t>(status.size() + 1, 6), ' ');
    out += "  " + status + item.text + "\n";
  }
  const CheckVerdict v = EvaluateHost(host, spec);
  out += "\n";
  if (v.can_run) {
    out += "Verdict: corral run can run " + what + " on this host. It will enforce:\n";
    out += Bullets(v.enforced);
  } else {
    out += "Verdict: corral run REFUSES " + what + " on this host:\n";
    out += Bullets(v.refusals);
    out += "With those fixed or opted out of, it would enforce:\n";
    out += Bullets(v.enforced);
  }
  if (!v.warnings.empty()) out += "Warnings:\n" + Bullets(v.warnings);
  return out;
}

nlohmann::json CheckReportJson(const HostInfo& host, const JailSpec& spec) {
  nlohmann::json namespaces = nlohmann::json::object();
  for (const NamespaceSupport& ns : host.namespaces) {
    namespaces[ns.name] = {{"present", ns.present},
                           {"unshare", ns.unshare_ok},
                           {"error", ErrnoJson(ns.unshare_errno)}};
  }
  auto optional_int = [](const std::optional<int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json items = nlohmann::json::array();
  for (const CheckItem& item : CheckItems(host)) {
    items.push_back({{"status", item.status}, {"text", item.text}});
  }
  const CheckVerdict v = EvaluateHost(host, spec);
  return {
      {"kernel_release", host.kernel_release},
      {"machine", host.machine},
      {"euid", host.euid},
      {"root", host.is_root},
      {"online_cpus", host.online_cpus},
      {"namespaces", namespaces},
      {"unprivileged_userns",
       {{"works", host.unprivileged_userns_ok},
        {"error", ErrnoJson(host.unprivileged_userns_errno)},
        {"unprivileged_userns_clone", optional_int(host.unprivileged_userns_clone)},
        {"max_user_namespaces", optional_int(host.max_user_namespaces)}}},
      {"seccomp", {{"filter", host.seccomp_filter}, {"actions", host.seccomp_actions}}},
      {"landlock",
       {{"abi", host.landlock_abi},
        {"error",
         host.landlock_abi > 0 ? nlohmann::json(nullptr) : ErrnoJson(host.landlock_errno)}}},
      {"cgroups", CgroupJson(host.cgroups)},
      {"rootless_ids",
       {{"user", host.rootless_ids.user},
        {"subid_ranges", host.rootless_ids.subid_ranges},
        {"uidmap_helpers", host.rootless_ids.uidmap_helpers}}},
      {"identity", host.identity ? nlohmann::json{{"mode", host.identity->mode},
                                                  {"host_uid", host.identity->host_uid},
                                                  {"host_gid", host.identity->host_gid},
                                                  {"note", host.identity->note},
                                                  {"error", host.identity->error}}
                                 : nlohmann::json(nullptr)},
      {"overlayfs", host.overlayfs},
      {"syscalls",
       {{"clone3", host.syscalls.clone3},
        {"pidfd_open", host.syscalls.pidfd_open},
        {"close_range", host.syscalls.close_range},
        {"open_tree", host.syscalls.open_tree},
        {"mount_setattr", host.syscalls.mount_setattr}}},
      {"no_new_privs", host.no_new_privs},
      {"cap_sys_resource", host.cap_sys_resource},
      {"cap_sys_admin", host.cap_sys_admin},
      {"swap_enabled",
       host.swap_enabled ? nlohmann::json(*host.swap_enabled) : nlohmann::json(nullptr)},
      {"netproxy",
       {{"path",
         host.netproxy_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(host.netproxy_path)},
        {"error", host.netproxy_error.empty() ? nlohmann::json(nullptr)
                                              : nlohmann::json(host.netproxy_error)}}},
      {"items", items},
      {"verdict",
       {{"can_run", v.can_run},
        {"can_run_default_config", EvaluateHost(host, JailSpec{}).can_run},
        {"enforced", v.enforced},
        {"refusals", v.refusals},
        {"warnings", v.warnings}}},
  };
}

}  // namespace corral::runtime
