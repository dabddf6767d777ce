// A JailSpec as an OCI bundle: config.json plus the small rootfs directory it names.
//
// The root layout is corral's own (runtime/run/root_layout.h), planned the way a rootless
// jail plans it — every bind by host path — and translated op by op:
//   tmpfs, proc, devpts, bind  -> config.json `mounts` (binds rbind, rprivate, nosuid,
//                                 nodev; read-only ones "ro" + "rro", recursively)
//   /proc masks (a /dev/null bind over a file, an empty ro tmpfs over a directory)
//                              -> `linux.maskedPaths` (the runtime does the same)
//   /proc/sys read-only, /dev read-only (its submounts pts and shm stay writable)
//                              -> `linux.readonlyPaths`
//   /dev's device nodes and /dev/fd, stdin, stdout, stderr, ptmx symlinks
//                              -> left to the runtime, which makes the same default set
//   mkdir, files and symlinks of the root itself (/bin -> usr/bin, /home, /mnt, /etc when
//   there is no shared snapshot) -> made in the bundle's rootfs/, mounted read-only
// and the rest of the spec: namespaces (mount always; pid, uts, ipc, net, cgroup as the
// spec says), uid/gid with no supplementary groups, no capabilities in any set,
// noNewPrivileges, rlimits, env and cwd as process mode computes them, the seccomp
// profile (oci_seccomp.h), and cgroup limits in `linux.resources` under `cgroupsPath`.
// The container's PID 1 is corral-init (jail/init/corral_init.c), bound read-only at
// kContainerInitPath, which runs the command and reports its wait status on fd 3 (the
// runtime's --preserve-fds 1), as process mode's init does; the command is never PID 1.
// Parent side.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::oci {

// Where corral-init appears inside the container, and the fd it reports on.
inline constexpr const char* kContainerInitPath = "/.corral/init";
inline constexpr int kContainerReportFd = 3;

// What of a spec container mode cannot honour, as an error naming the key; Ok otherwise.
// (rootless, network allowlist, landlock.enabled true.)
Status CheckContainerSpec(const JailSpec& spec);

// Makes `bundle_dir`/rootfs (bundle_dir must exist) and writes `bundle_dir`/config.json
// for `spec` (validated). `cgroups_path`: the config's linux.cgroupsPath; `init_program`:
// the host path of corral-init, bound at kContainerInitPath.
Status WriteBundle(const JailSpec& spec, const std::string& bundle_dir,
                   const std::string& cgroups_path, const std::string& init_program);

// The config.json object WriteBundle writes, making the rootfs entries under
// `rootfs_dir` (which must exist) as it goes.
Result<nlohmann::json> OciConfig(const JailSpec& spec, const std::string& rootfs_dir,
                                 const std::string& cgroups_path, const std::string& init_program);

// A minimal config for `corral bench`'s crun/runc peers: `args` in pid, network, ipc, uts
// and mount namespaces over the read-only `rootfs` (absolute), /proc, /dev and /tmp
// (tmpfs), uid 0 with every capability set empty, no seccomp, no cgroup limits.
std::string MinimalOciConfigJson(const std::string& rootfs, const std::vector<std::string>& args);

}  // namespace corral::runtime::oci
