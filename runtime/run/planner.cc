#include "runtime/run/planner.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/files.h"
#include "base/shell_quote.h"
#include "jail/seccomp.h"
#include "runtime/net/in_jail.h"
#include "runtime/run/identity.h"
#include "runtime/run/landlock_plan.h"
#include "runtime/run/root_layout.h"
#include "runtime/run/seccomp_cache.h"
#include "runtime/run/user_ns_plan.h"

namespace corral::runtime {

namespace {

// Where the child mounts the new root before pivot_root. Any existing directory works:
// it is in the child's private mount namespace, and bind sources were opened beforehand,
// so covering the host's /tmp there hides nothing the jail needs.
constexpr const char* kStagingDir = "/tmp";

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

Status MkdirOwned(const std::string& path, uid_t uid, gid_t gid) {
  if (::mkdir(path.c_str(), 0755) == 0) {
    if (::chown(path.c_str(), uid, gid) != 0) return Error::FromErrno(errno, "chown " + path);
    return Ok();
  }
  if (errno == EEXIST) return Ok();
  return Error::FromErrno(errno, "mkdir " + path);
}

// Current hard limits are the ceiling: this host's bounding set lacks CAP_SYS_RESOURCE,
// so asking for more would fail in the child.
void AddRlimit(jail::JailPlan* plan, int resource, rlim_t soft, rlim_t hard) {
  rlimit current;
  if (::getrlimit(static_cast<__rlimit_resource>(resource), &current) == 0) {
    hard = std::min(hard, current.rlim_max);
  }
  soft = std::min(soft, hard);
  plan->rlimits.push_back({resource, rlimit{soft, hard}});
}

void AddRlimits(const JailSpec& spec, jail::JailPlan* plan) {
  const LimitsSpec& l = spec.limits;
  AddRlimit(plan, RLIMIT_FSIZE, static_cast<rlim_t>(l.file_size_bytes),
            static_cast<rlim_t>(l.file_size_bytes));
  AddRlimit(plan, RLIMIT_NOFILE, static_cast<rlim_t>(l.open_files),
            static_cast<rlim_t>(l.open_files));
  AddRlimit(plan, RLIMIT_CORE, 0, 0);  // core dumps would land in the workspace
  if (l.cpu_time_seconds) {
    // SIGXCPU at the soft limit (catchable), SIGKILL one second later.
    rlim_t secs = static_cast<rlim_t>(*l.cpu_time_seconds);
    AddRlimit(plan, RLIMIT_CPU, secs, secs + 1);
  }
}

Result<jail::SeccompProgram> CompileProfile(const std::string& profile) {
  if (!profile.empty() && profile[0] == '/') {
    ASSIGN_OR_RETURN(std::string text, ReadFile(profile));
    return CompileSeccompCached(text, profile);
  }
  ASSIGN_OR_RETURN(std::string text, jail::BuiltinSeccompProfileText(profile));
  return CompileSeccompCached(text, profile);
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> dirs;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') dirs.push_back(dir);  // relative entries: ignored
    start = end + 1;
  }
  return dirs;
}

}  // namespace

void AddPidsRlimitFallback(const JailSpec& spec, jail::JailPlan* plan) {
  if (!RunsRootless(spec)) return;
  const auto pids = static_cast<rlim_t>(spec.limits.pids);
  AddRlimit(plan, RLIMIT_NPROC, pids, pids);
}

std::vector<std::pair<std::string, std::string>> CommandEnvironment(const JailSpec& spec) {
  std::string user = spec.uid == 0 ? "root" : kSandboxUserName;
  std::vector<std::pair<std::string, std::string>> env = {
      {"PATH", kDefaultPath}, {"HOME", kSandboxHome}, {"USER", user},
      {"LOGNAME", user},      {"SHELL", "/bin/bash"}, {"LANG", "C.UTF-8"},
  };
  if (const char* term = std::getenv("TERM")) env.emplace_back("TERM", term);
  if (spec.network.mode == NetworkMode::kAllowlist) {
    for (auto& var : net::ProxyEnvironment()) env.push_back(std::move(var));
  }
  for (const auto& var : spec.env) {
    // Named references, not a structured binding: clang 14 cannot capture those.
    const std::string& name = var.first;
    const std::string& value = var.second;
    auto it = std::find_if(env.begin(), env.end(), [&](const auto& e) { return e.first == name; });
    if (it != env.end()) {
      it->second = value;
    } else {
      env.emplace_back(name, value);
    }
  }
  return env;
}

Status PrepareHostDirs(const JailSpec& spec) {
  if (!spec.user_data_dir) return Ok();
  const std::string& dir = *spec.user_data_dir;
  // mkdir -p: a root the config names may not exist yet (the design's filesystem.root).
  for (size_t i = dir.find('/', 1); i != std::string::npos; i = dir.find('/', i + 1)) {
    (void)::mkdir(dir.substr(0, i).c_str(), 0755);
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "user_data_dir " + dir);
  }
  // The host ids the jail's uid/gid are (the caller's own when rootless, the reserved
  // identity's in root mode where the host has one).
  ASSIGN_OR_RETURN(const HostIdentity identity, ResolveIdentity(spec));
  const uid_t uid = identity.uid;
  const gid_t gid = identity.gid;
  for (const char* sub : {"workspace", "uploads", "outputs"}) {
    RETURN_IF_ERROR(MkdirOwned(dir + "/" + sub, uid, gid));
  }
  // Say so now rather than fail later at "chdir /mnt/user-data/workspace" in the jail.
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return Error::FromErrno(errno, "user_data_dir " + dir);
  bool searchable = (st.st_uid == uid && (st.st_mode & S_IXUSR)) ||
                    (st.st_gid == gid && (st.st_mode & S_IXGRP)) || (st.st_mode & S_IXOTH);
  if (!searchable) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return Error(ErrorCode::kPermissionDenied, "user_data_dir " + dir + ": the jail's uid " +
                                                   std::to_string(uid) + " cannot enter it (mode " +
                                                   mode + ", owner " + std::to_string(st.st_uid) +
                                                   "); chmod o+x it or chown it to that uid");
  }
  return Ok();
}

jail::DeferredCommand CommandFor(const JailSpec& spec) {
  jail::DeferredCommand c;
  c.workdir = spec.workdir ? *spec.workdir
                           : (spec.user_data_dir ? std::string(kWorkspacePath) : std::string("/"));
  c.argv = spec.argv;
  for (const auto& [name, value] : CommandEnvironment(spec)) {
    c.envp.push_back(name + "=" + value);
    if (name == "PATH") c.path_dirs = SplitPath(value);
  }
  return c;
}

namespace {

// What a fresh jail and an exec into a persistent sandbox share: who the command runs as,
// its limits, argv/envp and filter.
Status PlanCommand(const JailSpec& spec, jail::JailPlan* plan) {
  plan->uid = spec.uid;
  plan->gid = spec.gid;
  AddRlimits(spec, plan);
  jail::DeferredCommand command = CommandFor(spec);
  plan->workdir = std::move(command.workdir);
  plan->argv_storage = std::move(command.argv);
  plan->envp_storage = std::move(command.envp);
  plan->path_dirs = std::move(command.path_dirs);
  plan->FinalizePointers();
  auto seccomp = CompileProfile(spec.seccomp_profile);
  if (!seccomp) return seccomp.error().WithContext("seccomp profile " + spec.seccomp_profile);
  plan->seccomp = std::move(*seccomp);
  return Ok();
}

}  // namespace

std::vector<std::string> WeakenedIsolation(const JailSpec& spec, bool limits_said) {
  std::vector<std::string> out;
  const NamespaceSpec& ns = spec.namespaces;
  if (!ns.pid)
    out.push_back(
        "namespaces.pid is off: the command sees and can signal host processes of its uid");
  if (!ns.uts) out.push_back("namespaces.uts is off: the command shares the host's hostname");
  if (!ns.ipc)
    out.push_back("namespaces.ipc is off: the command shares the host's SysV IPC and POSIX queues");
  if (!ns.net)
    out.push_back(
        "namespaces.net is off (unsafe.host_network): the command has the host's network");
  if (!ns.cgroup)
    out.push_back("namespaces.cgroup is off: the command sees the host's cgroup paths");
  if (spec.unsafe.allow_root && (spec.uid == 0 || spec.gid == 0)) {
    out.push_back("unsafe.allow_root: the command runs with uid/gid 0 (no capabilities)");
  }
  if (spec.seccomp_profile == "unconfined") {
    out.push_back("unsafe.allow_unconfined_seccomp: no seccomp filter");
  }
  if (spec.unsafe.allow_missing_limits && !limits_said) {
    out.push_back("unsafe.allow_missing_limits: limits that cannot be applied are skipped");
  }
  if (spec.landlock.enabled == LandlockMode::kOff) {
    out.push_back("landlock.enabled is false: the mount namespace is the only filesystem fence");
  }
  if (!spec.unsafe.network_resolve.empty()) {
    out.push_back("unsafe.network_resolve: " + std::to_string(spec.unsafe.network_resolve.size()) +
                  " fixed name -> address entries, used as given (loopback and private "
                  "addresses included)");
  }
  return out;
}

std::vector<std::string> MountHints(const JailSpec& spec) {
  std::vector<std::string> out;
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const MountSpec& m = spec.mounts[i];
    struct stat st;
    // A volume is id-mapped to the sandbox user (runtime/volumes/): its owner on disk is
    // the volume's, and writable all the same.
    if (!m.volume.empty()) continue;
    if (m.read_only || ::stat(m.host_path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    // The host's ids: under the reserved identity (or rootless) the jail's uid is another
    // uid on the host, and only that one's rights count there.
    const uid_t host_uid = HostUidOf(spec);
    const gid_t host_gid = HostGidOf(spec);
    bool writable = (st.st_uid == host_uid && (st.st_mode & S_IWUSR)) ||
                    (st.st_gid == host_gid && (st.st_mode & S_IWGRP)) || (st.st_mode & S_IWOTH);
    if (writable) continue;
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const std::string who = host_uid == spec.uid
                                ? "uid " + std::to_string(host_uid)
                                : "host uid " + std::to_string(host_uid) + " (uid " +
                                      std::to_string(spec.uid) + " in the sandbox)";
    out.push_back(m.host_path + " is mounted read-write at " + m.container_path +
                  ", but the sandbox user, " + who + ", cannot write there (owner uid " +
                  std::to_string(st.st_uid) + ", group " + std::to_string(st.st_gid) + ", mode " +
                  mode + "). On the host: chown -R " + std::to_string(host_uid) + ":" +
                  std::to_string(host_gid) + " " + ShellWord(m.host_path) +
                  "  (or setfacl -R -m u:" + std::to_string(host_uid) + ":rwX " +
                  ShellWord(m.host_path) + ")");
  }
  return out;
}

std::vector<std::string> SandboxWarnings(const JailSpec& spec) {
  std::vector<std::string> out = WeakenedIsolation(spec, /*limits_said=*/::geteuid() != 0);
  for (auto& hint : MountHints(spec)) out.push_back(std::move(hint));
  return out;
}

void AddMountHints(const JailSpec& spec, RunOutcome* outcome) {
  for (auto& hint : MountHints(spec)) {
    outcome->warnings.push_back(std::move(hint));
    ++outcome->unwritable_mounts;
  }
}

unsigned NamespaceFlags(const NamespaceSpec& ns) {
  unsigned flags = CLONE_NEWNS;
  if (ns.pid) flags |= CLONE_NEWPID;
  if (ns.uts) flags |= CLONE_NEWUTS;
  if (ns.ipc) flags |= CLONE_NEWIPC;
  if (ns.net) flags |= CLONE_NEWNET;
  return flags;
}

Result<jail::JailPlan> Plan(const JailSpec& spec) {
  jail::JailPlan plan;
  const NamespaceSpec& ns = spec.namespaces;
  plan.clone_flags = NamespaceFlags(ns);
  plan.new_cgroup_ns = ns.cgroup;
  plan.loopback_up = ns.net;
  if (ns.uts) plan.hostname = spec.hostname;
  plan.staging_dir = kStagingDir;
  if (RunsRootless(spec)) {
    // The proxy's network namespace is made by root (runtime/net/netproxy_launch.h), and a
    // jail in a user namespace of its own could not join it anyway.
    if (spec.network.mode == NetworkMode::kAllowlist) {
      return Error(ErrorCode::kUnsupported,
                   "network.mode allowlist needs root (its proxy's network namespace is made "
                   "by root); rootless jails have network none or host");
    }
    ASSIGN_OR_RETURN(plan.user_ns, PlanUserNamespace(spec));
    plan.clone_flags |= CLONE_NEWUSER;
  } else {
    // Root mode: the command's ids are a reserved host id no account has, where the host
    // has a range (runtime/run/identity.h); host-uid keeps the jail's ids as host ids.
    ASSIGN_OR_RETURN(HostIdentity identity, ResolveIdentity(spec));
    if (identity.mode == "reserved") {
      plan.user_ns = ReservedUserNamespace(spec, identity);
      plan.clone_flags |= CLONE_NEWUSER;
    }
  }
  RETURN_IF_ERROR(AddRootLayout(spec, &plan));
  RETURN_IF_ERROR(AddLandlock(spec, &plan));
  RETURN_IF_ERROR(PlanCommand(spec, &plan));
  return plan;
}

Result<jail::JailPlan> PlanExec(const JailSpec& spec) {
  jail::JailPlan plan;
  RETURN_IF_ERROR(PlanCommand(spec, &plan));
  return plan;
}

}  // namespace corral::runtime
