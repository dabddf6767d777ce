// Which OCI runtime runs a `mode: container` jail, and how to start it on this host.
// Parent side, except HideUnifiedCgroup (a forked child's, before exec).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/spec/modes.h"

namespace corral::runtime::oci {

struct OciRuntime {
  std::string name;  // "crun" | "runc" (the program's base name)
  std::string path;  // absolute
  // crun refuses a cgroup v1-hybrid host ("cgroups in hybrid mode not supported, drop all
  // controllers from cgroupv2") when a cgroup2 mount exists beside the v1 hierarchies,
  // even an empty one (here v2 at /sys/fs/cgroup/unified has only hugetlb). Each crun
  // invocation then runs in a private mount namespace where that mount is detached: the
  // host's mounts are untouched and crun uses the v1 hierarchies, as runc does.
  bool hide_unified_cgroup = false;
};

// `choice`: auto (crun, then runc) | crun | runc | an absolute path to either. Looks in
// $PATH and then /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin (runc is in
// /usr/sbin on Debian, which a non-login PATH may lack). kNotFound names what was looked for.
Result<OciRuntime> FindOciRuntime(const OciRuntimeChoice& choice);
// The same for the choice as written; one that is none of those is kInvalidArgument.
Result<OciRuntime> FindOciRuntime(const std::string& choice);

// Whether the host mounts cgroup v1 controllers and, beside them, cgroup2 at
// /sys/fs/cgroup/unified (a systemd "hybrid" layout).
bool HybridCgroupHost();

// Child side, after fork and before exec of crun: unshare the mount namespace, make it
// private, detach /sys/fs/cgroup/unified there. Returns 0 or an errno. Async-signal-safe.
int HideUnifiedCgroup();

// argv for one invocation: {path, args...}.
std::vector<std::string> RuntimeArgv(const OciRuntime& rt, const std::vector<std::string>& args);

}  // namespace corral::runtime::oci
