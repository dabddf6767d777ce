// The parts of corral-runc's plan (runc_plan.h) about the container's process, its host
// name and sysctls, and its cgroup limits.
#include <linux/capability.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>

#include "jail/seccomp.h"
#include "jail/seccomp_builtins.h"
#include "runtime/oci/runc_plan.h"

namespace corral::runtime::oci {

namespace {

bool HasOwnNamespace(const BundleConfig& config, const std::string& type) {
  const OciNamespace* ns = config.FindNamespace(type);
  if (ns == nullptr) return false;
  if (ns->path.empty()) return true;
  // Joined: fine unless it is the host's own (the namespace corral-runc runs in).
  struct stat joined;
  struct stat own;
  const std::string self = "/proc/self/ns/" + std::string(type == "network" ? "net" : type);
  return ::stat(ns->path.c_str(), &joined) == 0 && ::stat(self.c_str(), &own) == 0 &&
         (joined.st_ino != own.st_ino || joined.st_dev != own.st_dev);
}

// The namespace a sysctl lives in, as the kernel scopes it ("" if it is the host's).
std::string SysctlNamespace(const std::string& key) {
  static const char* const kIpcKeys[] = {"kernel.msgmax", "kernel.msgmnb",         "kernel.msgmni",
                                         "kernel.sem",    "kernel.shmall",         "kernel.shmmax",
                                         "kernel.shmmni", "kernel.shm_rmid_forced"};
  if (key.rfind("net.", 0) == 0) return "network";
  if (key.rfind("fs.mqueue.", 0) == 0) return "ipc";
  for (const char* ipc_key : kIpcKeys) {
    if (key == ipc_key) return "ipc";
  }
  if (key == "kernel.hostname" || key == "kernel.domainname") return "uts";
  return "";
}

uint64_t CapabilityMask(const std::vector<int>& caps) {
  uint64_t mask = 0;
  for (int cap : caps) {
    if (cap >= 0 && cap < 64) mask |= uint64_t{1} << cap;
  }
  return mask;
}

}  // namespace

Status PlanHostAndSysctls(const BundleConfig& config, ContainerPlan* plan) {
  const OciNamespace* uts = config.FindNamespace("uts");
  const bool own_uts = uts != nullptr && uts->path.empty();
  if (!config.hostname.empty()) {
    if (!own_uts)
      return ConfigFieldError("hostname", "needs a new UTS namespace (linux.namespaces)");
    plan->jail.hostname = config.hostname;
  }
  if (!config.domainname.empty()) {
    if (!own_uts) return ConfigFieldError("domainname", "needs a new UTS namespace");
    plan->jail.sysctls.emplace_back("/proc/sys/kernel/domainname", config.domainname);
  }
  for (const auto& [key, value] : config.sysctl) {
    const std::string ns = SysctlNamespace(key);
    if (ns.empty()) {
      return ConfigFieldError("linux.sysctl." + key,
                              "not a namespaced sysctl: it would change the host, refused");
    }
    if (!HasOwnNamespace(config, ns)) {
      return ConfigFieldError("linux.sysctl." + key,
                              "needs a " + ns + " namespace other than the host's");
    }
    if (key.find("..") != std::string::npos || key.find('/') != std::string::npos) {
      return ConfigFieldError("linux.sysctl." + key, "not a sysctl name");
    }
    std::string path = "/proc/sys/" + key;
    std::replace(path.begin() + 10, path.end(), '.', '/');
    plan->jail.sysctls.emplace_back(path, value);
  }
  const OciNamespace* net = config.FindNamespace("network");
  plan->jail.loopback_up = net != nullptr && net->path.empty();
  return Ok();
}

Status PlanProcess(const BundleConfig& config, ContainerPlan* plan) {
  jail::JailPlan& jail = plan->jail;
  const OciProcess& process = config.process;
  if (process.args.empty()) return ConfigFieldError("process.args", "must not be empty");
  jail.use_container_identity = true;
  jail.uid = process.user.uid;
  jail.gid = process.user.gid;
  jail::ContainerIdentity& id = jail.container_identity;
  id.groups.assign(process.user.additional_gids.begin(), process.user.additional_gids.end());
  id.umask = process.user.umask ? static_cast<int>(*process.user.umask) : -1;
  id.no_new_privs = process.no_new_privileges;
  // Device access is what the nodes the runtime made allow: without CAP_MKNOD the
  // container cannot make others (corral-runc writes no device cgroup rules).
  const uint64_t keep = ~(uint64_t{1} << CAP_MKNOD);
  id.bounding = CapabilityMask(process.capabilities.bounding) & keep;
  id.effective = CapabilityMask(process.capabilities.effective) & keep;
  id.permitted = CapabilityMask(process.capabilities.permitted) & keep;
  id.inheritable = CapabilityMask(process.capabilities.inheritable) & keep;
  id.ambient = CapabilityMask(process.capabilities.ambient) & keep;
  // The kernel raises an ambient capability only if it is permitted and inheritable too;
  // runc's default spec lists ambient ones it does not make inheritable.
  const uint64_t ambient_possible = id.ambient & id.permitted & id.inheritable;
  if (ambient_possible != id.ambient) {
    plan->notes.push_back(
        "process.capabilities.ambient: only capabilities also permitted and inheritable are "
        "raised");
    id.ambient = ambient_possible;
  }
  if ((CapabilityMask(process.capabilities.bounding) & ~keep) != 0) {
    plan->notes.push_back("process.capabilities: CAP_MKNOD dropped (corral-runc)");
  }
  for (const OciRlimit& limit : process.rlimits) {
    jail.rlimits.emplace_back(limit.resource, rlimit{limit.soft, limit.hard});
  }
  jail.argv_storage = process.args;
  jail.envp_storage = process.env;
  std::string path_value = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const std::string& entry : process.env) {
    if (entry.rfind("PATH=", 0) == 0) path_value = entry.substr(5);
  }
  size_t start = 0;
  while (start <= path_value.size()) {
    size_t end = path_value.find(':', start);
    if (end == std::string::npos) end = path_value.size();
    if (end > start) jail.path_dirs.push_back(path_value.substr(start, end - start));
    start = end + 1;
  }
  jail.workdir = process.cwd;
  if (process.console_size) {
    jail.console_rows = static_cast<uint16_t>(process.console_size->first);
    jail.console_cols = static_cast<uint16_t>(process.console_size->second);
  }
  std::vector<std::string> dropped;
  Result<jail::SeccompProgram> seccomp =
      config.seccomp_profile_json
          ? jail::CompileRuncSeccompProfile(*config.seccomp_profile_json,
                                            "config.json linux.seccomp", &dropped)
          : [&]() -> Result<jail::SeccompProgram> {
    ASSIGN_OR_RETURN(std::string text, jail::BuiltinSeccompProfileText("default"));
    plan->notes.push_back("linux.seccomp: absent, corral's default profile");
    return jail::CompileSeccompProfile(text, "corral's default profile");
  }();
  if (!seccomp) return seccomp.error();
  for (const std::string& rule : dropped) {
    plan->notes.push_back("linux.seccomp: " + rule + " left out, as libseccomp does under runc");
  }
  jail.seccomp = std::move(*seccomp);
  jail.FinalizePointers();
  return Ok();
}

cgroups::Limits ResourcesToLimits(const OciResources& resources,
                                  std::vector<std::string>* unapplied) {
  cgroups::Limits limits;
  if (resources.memory_limit && *resources.memory_limit > 0) {
    limits.memory_bytes = *resources.memory_limit;
  }
  // memory.swap is memory plus swap: equal to the limit means no swap (corral's default);
  // anything more cannot be written by corral's drivers, which know no-swap or no limit.
  if (resources.memory_swap && limits.memory_bytes &&
      *resources.memory_swap != *limits.memory_bytes) {
    limits.no_swap = false;
    unapplied->push_back("linux.resources.memory.swap (swap is allowed without a limit)");
  }
  if (resources.cpu_quota && *resources.cpu_quota > 0) {
    // A period of 0 is no period: the kernel's default, as runc leaves it.
    const uint64_t period_us =
        resources.cpu_period.value_or(0) > 0 ? *resources.cpu_period : 100000;
    const double period = static_cast<double>(period_us);
    limits.cpus = static_cast<double>(*resources.cpu_quota) / period;
  }
  if (resources.pids_limit && *resources.pids_limit > 0) limits.pids = *resources.pids_limit;
  if (resources.memory_reservation) unapplied->push_back("linux.resources.memory.reservation");
  if (resources.cpu_shares) unapplied->push_back("linux.resources.cpu.shares");
  if (!resources.cpuset_cpus.empty() || !resources.cpuset_mems.empty()) {
    unapplied->push_back("linux.resources.cpu.cpus/mems");
  }
  if (!resources.devices.empty()) {
    unapplied->push_back(
        "linux.resources.devices (the container has only the nodes listed, and no CAP_MKNOD)");
  }
  return limits;
}

}  // namespace corral::runtime::oci
