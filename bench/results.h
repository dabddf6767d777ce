// What one benchmark run measured: plain data produced by the runner (bench/runner.h) and
// rendered by the report writers (bench/report.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/stats.h"

namespace corral::bench {

struct MachineInfo {
  std::string kernel;        // uname -r
  std::string cpu_model;     // /proc/cpuinfo "model name"
  int cores = 0;             // online CPUs
  int64_t memory_bytes = 0;  // MemTotal
  std::string cgroup_mode;   // "v2", "hybrid (v1 controllers, v2 at /sys/fs/cgroup/unified)", "v1"
  // How busy the host was: other load moves the figures, so a report says how much there was.
  std::optional<std::array<double, 3>> load_start, load_end;  // /proc/loadavg 1, 5, 15 min
  std::optional<double> steal_percent;  // CPU time stolen by the hypervisor over the run
};

// /proc/loadavg's three averages; nullopt if unreadable.
std::optional<std::array<double, 3>> ReadLoadAverage();
// /proc/stat's aggregate cpu line: (steal, total) jiffies; nullopt if unreadable.
std::optional<std::pair<uint64_t, uint64_t>> ReadStealJiffies();

enum class EntryStatus { kOk, kSkipped, kFailed };
const char* EntryStatusName(EntryStatus s);  // "ok", "skipped", "failed"

// One launcher on one workload. samples_ms[i] was taken in round i: entries of the same
// workload with status kOk have equally many samples, paired by index.
struct LatencyEntry {
  std::string name;
  std::string group;  // "layer" | "peer"
  std::string description;
  EntryStatus status = EntryStatus::kOk;
  std::string reason;  // why skipped/failed
  std::vector<double> samples_ms;
  Summary summary;
};

struct WorkloadResult {
  std::string workload;
  std::vector<LatencyEntry> entries;
};

// Launches per second with `workers` concurrent launchers, measured in slices interleaved
// with the other launchers; slice_rates[i] was measured in round i.
struct ThroughputEntry {
  std::string name;
  EntryStatus status = EntryStatus::kOk;
  std::string reason;
  int workers = 0;
  double launches_per_s = 0;  // total launches / total time over all slices
  std::vector<double> slice_rates;
};

struct SandboxFigures {
  EntryStatus status = EntryStatus::kSkipped;
  std::string reason;
  int requested = 0;
  int created = 0;
  int concurrency = 0;    // creates in flight at once
  double bring_up_s = 0;  // first create started -> last one up
  double remove_s = 0;
  // Host memory per idle sandbox, three ways.
  std::optional<double> mem_available_per_sandbox_bytes;  // drop in MemAvailable / N
  std::optional<double> cgroup_memory_per_sandbox_bytes;  // sandbox cgroup usage / N
  std::optional<double> init_pss_per_sandbox_bytes;       // PSS of the inits / N
  // `corral pause` / `resume` (runtime/sandboxes/pause.h, as the CLI and the daemon call
  // them) of one of them holding kPauseProcesses processes, per round.
  std::vector<double> pause_ms;
  std::vector<double> resume_ms;
  // `corral diff` (runtime/sandboxes/workspace_overlay.h) of a workspace overlay holding
  // kDiffFiles new files, kDiffBytes in all, per round; and its upper layer's disk use.
  std::vector<double> diff_ms;
  std::optional<int64_t> diff_upper_bytes;
  std::string diff_reason;  // why there is no diff figure
  // `corral fork` (runtime/volumes/sandbox_fork.h) of that same sandbox, per round: the
  // snapshot and the new sandbox's create; and the most disk one fork added (the state
  // directory's use before and after it).
  std::vector<double> fork_ms;
  std::optional<int64_t> fork_extra_bytes;
  std::string fork_reason;  // why there is no fork figure
};

// `corral serve` over HTTP on loopback (bench/serve_figures.h says how each is taken).
struct ServeFigures {
  EntryStatus status = EntryStatus::kSkipped;
  std::string reason;
  int requested = 0;
  int created = 0;
  double bring_up_s = 0;                     // all creates, each followed by its first exec
  std::vector<double> create_to_exec_ms;     // per sandbox
  std::vector<double> exec_fresh_ms;         // shell/exec `true`, no session id, back to back
  std::vector<double> exec_fresh_paused_ms;  // the same, kServePauseMs after each call
  std::vector<double> exec_session_ms;       // shell/exec `true` in one live session
  std::optional<double> daemon_rss_start_bytes;
  std::optional<double> daemon_rss_idle_bytes;  // with `created` sandboxes idle
  std::optional<double> mem_available_per_sandbox_bytes;
};

struct TargetResult {
  std::string name;    // "corral run vs bwrap (median, /bin/true)"
  std::string target;  // "<= 0.50x"
  bool measured = false;
  // The value is an extrapolation from a smaller run (e.g. 1000 sandboxes from 100): it
  // is reported as an estimate and never judged, so pass stays false.
  bool estimate = false;
  double value = 0;
  std::string unit;  // "x", "MiB", "s"
  // The interquartile range of the per-round figures behind `value`, where there are any:
  // a verdict must clear it. PASS (pass) only when all of it meets the target, MISS only
  // when none of it does; otherwise unclear, and the verdict is left open.
  std::optional<std::pair<double, double>> spread;
  bool unclear = false;
  bool pass = false;
  std::string note;  // e.g. "extrapolated from 100 sandboxes"
};

struct BenchResults {
  std::string command;     // the command line that produced this run
  std::string started_at;  // ISO-8601 UTC
  MachineInfo machine;
  int rounds = 0;
  int pause_ms = 0;  // idle time before each timed latency launch
  int workers = 0;
  std::vector<WorkloadResult> latency;
  std::vector<ThroughputEntry> throughput;
  SandboxFigures sandboxes;
  ServeFigures serve;
  std::vector<TargetResult> targets;
  double duration_s = 0;
};

// The paired ratio a/b for two named entries of one workload, if both ran.
std::optional<PairedRatio> RatioBetween(const WorkloadResult& w, const std::string& a,
                                        const std::string& b);
const LatencyEntry* FindEntry(const WorkloadResult& w, const std::string& name);

// Launcher names the targets refer to.
inline constexpr const char* kBareName = "bare fork+exec";
inline constexpr const char* kCorralRunName = "corral run (full default)";
inline constexpr const char* kCorralPoolRunName = "corral run, pool server";
inline constexpr const char* kCorralExecName = "corral exec (persistent)";
inline constexpr const char* kCorralPoolExecName = "corral exec, pool server";
inline constexpr const char* kBwrapName = "bwrap";
// The rootless rows (bench/rootless.h): both as the same unprivileged account.
inline constexpr const char* kCorralRootlessRunName = "corral run, rootless";
inline constexpr const char* kCorralRootlessPoolRunName = "corral run, rootless, pooled";
inline constexpr const char* kBwrapRootlessName = "bwrap, unprivileged";

// Host memory per idle sandbox (MemAvailable drop) against <= 1 MiB; unset: not measured.
// Sets t's spread and verdict from the interquartile range [q1, q3] of its per-round
// figures against `limit` (at most, or at least).
void JudgeWithSpread(TargetResult* t, double q1, double q3, double limit, bool at_most);

// The median of `samples` (ms) at most `limit_ms`; "not measured" when there are none.
TargetResult MedianTarget(const std::string& name, const std::vector<double>& samples,
                          double limit_ms, const std::string& note);
// Judged on the larger of the MemAvailable drop and the sandboxes' own cgroup charge, both
// per sandbox (host memory is at least what the cgroups are charged; the drop alone reads
// below it when the host's own churn is larger than a few sandboxes).
TargetResult IdleMemoryTarget(const std::string& name, std::optional<double> bytes_per_sandbox,
                              std::optional<double> cgroup_bytes_per_sandbox, int sandboxes,
                              const std::string& why_not);
// `count` sandboxes up within `limit_s`, from `created` brought up in `bring_up_s`: an
// estimate (shown, never judged) when fewer were made. `estimate_hint` ends an estimate's
// note, `how` a measured one's.
TargetResult BringUpTarget(const std::string& name, int count, double limit_s, bool ok, int created,
                           double bring_up_s, const std::string& why_not,
                           const std::string& estimate_hint, const std::string& how);

// Fills results->targets from the figures (corral's performance targets, as ratios from
// this run).
void EvaluateTargets(BenchResults* results);

}  // namespace corral::bench
