// ForEachInParallel: runs fn(0) .. fn(count - 1) on up to `parallel` threads, each taking
// the next index when it is done with one. For work that waits on the kernel rather than
// the CPU (removing sandboxes: killing trees, namespace teardown, cgroup removal), where
// running several side by side is what makes many of them fast.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace corral {

// Returns once every call has returned. fn must be safe to call from several threads at
// once for different indexes; `parallel` <= 1 (or one item) runs everything on the caller.
template <typename Fn>
void ForEachInParallel(size_t count, int parallel, Fn&& fn) {
  const size_t workers = std::min<size_t>(parallel > 0 ? static_cast<size_t>(parallel) : 1, count);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) fn(i);
  };
  if (workers <= 1) {
    work();
    return;
  }
  std::vector<std::jthread> threads;
  threads.reserve(workers);
  for (size_t t = 0; t < workers; ++t) threads.emplace_back(work);
}  // the threads join here

}  // namespace corral
