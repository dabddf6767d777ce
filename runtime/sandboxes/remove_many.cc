#include "runtime/sandboxes/remove_many.h"

#include <unistd.h>

#include <algorithm>

#include "base/parallel_for.h"
#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {

int DefaultRemovalParallelism() {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::clamp<long>(2 * cpus, 4, 32));
}

std::vector<Status> RemoveSandboxes(const std::vector<std::string>& names_or_ids, int parallel) {
  std::vector<Status> results(names_or_ids.size(), Ok());
  ForEachInParallel(names_or_ids.size(), parallel > 0 ? parallel : DefaultRemovalParallelism(),
                    [&](size_t i) { results[i] = RemoveSandbox(names_or_ids[i]); });
  return results;
}

}  // namespace corral::runtime
