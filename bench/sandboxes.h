// Persistent-sandbox figures: bring N sandboxes up concurrently with `corral create`,
// measure the host memory they hold while idle, remove them.
#pragma once

#include <string>

#include "bench/progress.h"
#include "bench/results.h"

namespace corral::bench {

// Sandboxes are named corral-bench-<pid>-<i>, so only those are removed.
SandboxFigures MeasureSandboxes(const std::string& corral_exe, int count, Progress& progress);

// "Pss:" of /proc/<pid>/smaps_rollup in bytes, or nullopt.
std::optional<int64_t> ReadPssBytes(int pid);
// MemAvailable from /proc/meminfo in bytes, or nullopt.
std::optional<int64_t> ReadMemAvailableBytes();

}  // namespace corral::bench
