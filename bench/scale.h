// `corral bench --scale`: persistent sandboxes brought up in steps (1,000 / 4,000 /
// 10,000 by default), each step measured while they idle, then removed step by step.
// What it shows is the kernel's side of density: the host memory one idle sandbox costs
// as their number grows (the per-memory-cgroup state every filesystem superblock adds
// grows with the square of the number of sandboxes), the unreclaimable slab, and how long
// bringing them up and removing them takes as the host fills. Every create and rm is a
// `corral` process, from several workers at once, as a platform's calls would be.
//
// Safety: a step that would take MemAvailable below a margin (2 GiB or a tenth of
// MemTotal, whichever is more) is not started, and everything made is removed, also
// after SIGINT/SIGTERM (the signal ends the bring-up; the removal still runs).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "bench/progress.h"
#include "bench/results.h"

namespace corral::bench {

struct ScaleOptions {
  std::string corral_exe;
  std::vector<int> steps = {1000, 4000, 10000};  // sandboxes up at each step, ascending
  int workers = 16;                              // creates (and removals) in flight at once
};

struct ScaleStep {
  int target = 0;     // sandboxes this step asked for
  int up = 0;         // sandboxes up once its creates ended
  int failed = 0;     // creates that failed in this step
  double up_s = 0;    // bringing this step's new sandboxes up (from the step before)
  double down_s = 0;  // removing them again (back to the step before)
  int removed = 0;    // of those, removed without an error
  std::optional<double> host_bytes_per_sandbox;     // MemAvailable's drop since the start / up
  std::optional<int64_t> slab_unreclaimable_bytes;  // SUnreclaim, whole host, at the step
  // Beside this many sandboxes: the median of a few cold `corral run -- /bin/true` and of
  // a few `corral exec NAME -- /bin/true` into one of them (what an agent's call costs
  // on a full host).
  std::optional<double> cold_run_ms;
  std::optional<double> exec_ms;
  // One `corral ps` (every sandbox's record, liveness and cgroup figures): what a daemon's
  // restart reads to adopt them.
  std::optional<double> ps_ms;
};

// One goal of issue-level targets, judged on this run.
struct ScaleGoal {
  std::string what;     // "memory per sandbox at 10,000 <= 1.25x at 1,000"
  std::string verdict;  // "PASS", "MISS" or "not judged"
  std::string detail;   // the figures, or why it was not judged here
};

struct ScaleFigures {
  EntryStatus status = EntryStatus::kSkipped;
  std::string reason;   // a step not started, a signal, the first error
  MachineInfo machine;  // cores, memory, cgroup mode
  int workers = 0;
  int64_t margin_bytes = 0;  // MemAvailable kept free
  std::optional<int64_t> mem_available_start_bytes;
  std::optional<int64_t> slab_unreclaimable_start_bytes;
  std::vector<ScaleStep> steps;
  int left_behind = 0;  // sandboxes that could not be removed (named in `reason`)
  std::vector<ScaleGoal> goals;
};

// "1000,4000,10000" -> {1000, 4000, 10000}: positive, ascending, at most 100,000.
Result<std::vector<int>> ParseScaleSteps(const std::string& text);

ScaleFigures MeasureScale(const ScaleOptions& options, Progress& progress);

// The goals, judged from the figures (also used by tests with made-up figures).
std::vector<ScaleGoal> JudgeScale(const ScaleFigures& f);

std::string FormatScaleTable(const ScaleFigures& f);
nlohmann::json ScaleToJson(const ScaleFigures& f);

}  // namespace corral::bench
