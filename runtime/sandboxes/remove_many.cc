#include "runtime/sandboxes/remove_many.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {

int DefaultRemovalParallelism() {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::clamp<long>(2 * cpus, 4, 32));
}

std::vector<Status> RemoveSandboxes(const std::vector<std::string>& names_or_ids, int parallel) {
  std::vector<Status> results(names_or_ids.size(), Ok());
  if (parallel <= 0) parallel = DefaultRemovalParallelism();
  const size_t workers = std::min<size_t>(static_cast<size_t>(parallel), names_or_ids.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < names_or_ids.size();) {
      results[i] = RemoveSandbox(names_or_ids[i]);
    }
  };
  if (workers <= 1) {
    work();
    return results;
  }
  {
    std::vector<std::jthread> threads;
    for (size_t t = 0; t < workers; ++t) threads.emplace_back(work);
  }  // joined here, before `results` is read
  return results;
}

}  // namespace corral::runtime
