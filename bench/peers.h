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

}  // namespace corral::bench
