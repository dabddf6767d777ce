#include "runtime/run/user_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/files.h"
#include "runtime/run/jail_cgroup.h"

namespace corral::runtime {

namespace {

std::string Advice(uid_t uid) {
  return "; corral needs a cgroup v2 subtree delegated to uid " + std::to_string(uid) +
         ": on a cgroup v2 host run it as `systemd-run --user --scope -p Delegate=yes corral "
         "...` (or from a systemd user service with Delegate=yes); on a cgroup v1 or hybrid "
         "host boot with systemd.unified_cgroup_hierarchy=1, or run corral as root. Or set "
         "unsafe.allow_missing_limits: true to run with rlimits only (no memory, cpu or pids "
         "limit)";
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Result<std::string> PrepareUserCgroupParent(const JailSpec& spec) {
  const uid_t uid = ::geteuid();
  ASSIGN_OR_RETURN(cgroups::HierarchyInfo info, cgroups::Detect(ManagerOptionsFor(spec.cgroups)));
  auto self = ReadFile("/proc/self/cgroup");
  cgroups::DelegatedCgroup found = cgroups::FindDelegatedCgroup(info, self ? *self : "", uid);
  if (!found.dir) return Error(ErrorCode::kUnsupported, found.why_not);
  // The delegated cgroup holds this process: move it into a leaf so that the cgroup may
  // hand its controllers to the jails' parent.
  std::string leaf = *found.dir + "/corral-supervisor";
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "mkdir " + leaf);
  }
  RETURN_IF_ERROR(WriteFile(leaf + "/cgroup.procs", "0"));
  return *found.dir + "/corral";
}

std::string MissingLimitsRefusal(const JailSpec& spec, const std::string& why) {
  return "cannot enforce " + SkippedLimits(spec.limits) + " without root: " + why +
         Advice(::geteuid());
}

std::string MissingLimitsWarning(const JailSpec& spec, const std::string& why) {
  const LimitsSpec& l = spec.limits;
  return "rootless: limits.memory (" + std::to_string(l.memory_bytes / (1024 * 1024)) +
         " MiB) and limits.cpus (" + Number(l.cpus) +
         ") are NOT enforced (unsafe.allow_missing_limits: " + why + "); limits.pids (" +
         std::to_string(l.pids) + ") holds as RLIMIT_NPROC";
}

std::string SkippedLimits(const LimitsSpec& l) {
  return "limits.memory (" + std::to_string(l.memory_bytes / (1024 * 1024)) +
         " MiB), limits.cpus (" + Number(l.cpus) + ") and limits.pids (" + std::to_string(l.pids) +
         ")";
}

}  // namespace corral::runtime
