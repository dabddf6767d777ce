// Removing many sandboxes at once (`corral rm a b c`, `corral rm --all`, the bench's scale
// run): each removal waits on the kernel (killing a tree, its namespaces' teardown, cgroup
// removal), not on the CPU, so several run side by side. Parent side.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace corral::runtime {

// How many removals run at once by default: twice the online CPUs, at least 4, at most 32.
int DefaultRemovalParallelism();

// RemoveSandbox (runtime/sandboxes/persistent.h) of each of `names_or_ids`, `parallel` at
// a time (0: the default above). One status per name, in the order given.
std::vector<Status> RemoveSandboxes(const std::vector<std::string>& names_or_ids, int parallel = 0);

}  // namespace corral::runtime
