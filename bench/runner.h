// The benchmark run: prepares every launcher, measures latency in interleaved rounds,
// throughput with N workers in interleaved slices, and N persistent sandboxes (bring-up
// time, idle memory), the daemon's figures over HTTP (create -> first exec, exec round
// trips, idle memory), then cleans up everything it created.
#pragma once

#include <string>

#include "base/result.h"
#include "bench/results.h"

namespace corral::bench {

struct BenchOptions {
  bool quick = false;
  int rounds = 0;      // 0 = default (60, quick 8)
  int workers = 0;     // 0 = online CPUs
  int sandboxes = -1;  // -1 = default (100, quick 10); 0 = skip that phase
  // `corral serve` figures (bench/serve_figures.h): sandboxes created through its API.
  int serve_sandboxes = -1;   // -1 = default (50, quick 5); 0 = skip that phase
  double slice_seconds = 0;   // throughput slice; 0 = default (1.5, quick 0.5)
  int throughput_rounds = 0;  // 0 = default (3, quick 1)
  // Latency rounds: idle time before each timed launch, as an agent thinks between tool
  // calls. Back-to-back launches keep the host warm (on cgroup v1 that hides the RCU
  // grace period of every cgroup join); 0 = back to back.
  int pause_ms = 0;
  bool peers = true;       // false: the ladder only
  std::string corral_exe;  // the corral binary for the corral rungs
  std::string command;     // recorded in the report
};

// Fills in the defaults the options leave at 0.
BenchOptions ResolveOptions(BenchOptions options);

MachineInfo DescribeMachine();

// Runs everything; progress goes to stderr. An error only if nothing could be measured.
Result<BenchResults> RunBench(const BenchOptions& options);

}  // namespace corral::bench
