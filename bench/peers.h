// Peer sandboxes found on $PATH, each run with its own idea of a minimal sandbox for the
// same workload: unshare, bwrap, nsjail, firejail, crun and runc (with an OCI bundle
// generated here from busybox-static), docker/podman if an engine answers.
//
// A peer that is missing is still returned: its Prepare() fails with "not installed" and
// the report lists it as skipped.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/launcher.h"

namespace corral::bench {

std::vector<std::unique_ptr<Launcher>> MakePeers();

// bwrap's arguments before the workload, the same for the root and the unprivileged row:
// all namespaces, /usr read-only with the usual symlinks, /proc, /dev, "--" last.
std::vector<std::string> BwrapSandboxArgs();

// The OCI runtime config.json for `args` in a bundle whose root is `rootfs` (absolute):
// pid, mount, ipc, uts, network namespaces; read-only root; /proc, /dev (tmpfs), no
// terminal; uid 0 with the runtime's default capabilities dropped to none.
std::string OciConfigJson(const std::string& rootfs, const std::vector<std::string>& args);

}  // namespace corral::bench
