// corral-runc's plan: an OCI bundle's config (bundle_config.h) as a JailPlan for an
// InitMode::kExecDirect jail; and linux.resources as corral's cgroup limits. Parent side.
//
// What the config says is done as it says (namespaces new or joined by path, mounts,
// devices, process identity and capabilities, rlimits, sysctls, masked and read-only
// paths, seccomp, root read-only). Where it is silent, corral's hardening applies:
//   - no linux.seccomp: corral's built-in "default" profile;
//   - empty maskedPaths / readonlyPaths: corral's lists (kDefaultMaskedPaths below);
//   - every mount point is resolved inside the root (a symlink in the image cannot aim a
//     mount at a host path: jail/container_mounts.cc);
//   - a new network namespace gets its loopback up.
// What corral-runc cannot honour is refused naming the field: joining a mount or user
// namespace, user namespaces at all, a time namespace, a hostname without a new UTS
// namespace, a sysctl outside the namespaces the container has of its own, a mount
// option it does not know, shared or slave root propagation.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "cgroups/cgroup.h"
#include "jail/plan.h"
#include "runtime/oci/bundle_config.h"

namespace corral::runtime::oci {

inline const std::vector<std::string> kDefaultMaskedPaths = {"/proc/acpi",
                                                             "/proc/asound",
                                                             "/proc/kcore",
                                                             "/proc/keys",
                                                             "/proc/latency_stats",
                                                             "/proc/timer_list",
                                                             "/proc/timer_stats",
                                                             "/proc/sched_debug",
                                                             "/proc/scsi",
                                                             "/sys/firmware",
                                                             "/sys/devices/virtual/powercap"};
inline const std::vector<std::string> kDefaultReadonlyPaths = {"/proc/bus", "/proc/fs", "/proc/irq",
                                                               "/proc/sys", "/proc/sysrq-trigger"};

struct ContainerPlan {
  jail::JailPlan jail;
  // Owners of the fds in jail.join_namespaces.
  std::vector<UniqueFd> namespace_fds;
  // A PID namespace to join: the caller setns()es into it before the clone (a PID
  // namespace can only be entered by a new process).
  UniqueFd pid_namespace;
  // What the plan did in corral's own way, for the runtime's log ("linux.mounts[7]: ...").
  std::vector<std::string> notes;
};

struct ContainerPlanOptions {
  // The cgroup v1 controller directories of the container's cgroup, controller -> host
  // path: what a "cgroup" mount shows (read-only) on a v1 host. Empty on v2.
  std::vector<std::pair<std::string, std::string>> v1_cgroup_dirs;
  bool cgroup_v2 = false;
};

// linux.namespaces[].type -> its CLONE_NEW* flag; 0 for a type the parser would refuse.
int NamespaceCloneFlag(const std::string& type);

Result<ContainerPlan> PlanContainer(const BundleConfig& config,
                                    const ContainerPlanOptions& options);

// Parts of PlanContainer (runc_plan_process.cc): hostname, domain name and sysctls (only
// in namespaces the container has of its own); the process (ids, groups, capabilities,
// rlimits, argv, env, PATH, cwd, console size, seccomp).
Status PlanHostAndSysctls(const BundleConfig& config, ContainerPlan* plan);
Status PlanProcess(const BundleConfig& config, ContainerPlan* plan);

// linux.resources as corral's cgroup limits; fields corral's cgroup drivers cannot set
// (cpu shares, cpuset, memory reservation, device rules) are listed in *unapplied.
cgroups::Limits ResourcesToLimits(const OciResources& resources,
                                  std::vector<std::string>* unapplied);

}  // namespace corral::runtime::oci
