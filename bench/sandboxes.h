// Persistent-sandbox figures: bring N sandboxes up concurrently with `corral create`,
// measure the host memory they hold while idle, remove them.
#pragma once

#include <cstdint>
#include <optional>
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
// A "Field:   123 kB" line of a /proc file (field given with its colon), in bytes.
std::optional<int64_t> ReadKbField(const std::string& path, const std::string& field);
// MemAvailable moves with page cache and other tenants: the median of five reads 100 ms
// apart.
std::optional<int64_t> SettledMemAvailable();

}  // namespace corral::bench
