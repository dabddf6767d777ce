// The layer ladder: the same workload launched with one more isolation layer per rung, so
// the difference between neighbouring rungs is what that layer costs.
//
// Rungs 1-6 are implemented here with plain syscalls (fork/clone, mount, pivot_root,
// cgroup files, seccomp), not through corral's runtime, so that they show the kernel's
// price of each facility with nothing else around it:
//   1 bare fork+exec        fork, execve, waitpid
//   2 +pid/mnt/uts/ipc ns   clone(CLONE_NEWPID|NEWNS|NEWUTS|NEWIPC), mounts made private
//   3 +net ns               + CLONE_NEWNET, lo brought up
//   4 +fresh root           + tmpfs root with /usr bound read-only, fresh /proc,
//                           /dev/null, pivot_root, old root detached, root read-only
//   5 +cgroup               + a cgroup per run (memory, cpu, pids with corral's default
//                           limits), the child attached before exec, rmdir after; and
//                           CLONE_NEWCGROUP
//   6 +seccomp              + no_new_privs and corral's default seccomp filter
// Rungs 7-10 are corral itself: `corral run` (the binary), runtime::RunJail in-process,
// `corral exec` into one persistent sandbox, and one `bash` tool call if the tool layer
// is present.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/launcher.h"

namespace corral::bench {

// `corral_exe`: the corral binary the corral rungs run.
std::vector<std::unique_ptr<Launcher>> MakeLadder(const std::string& corral_exe);

}  // namespace corral::bench
