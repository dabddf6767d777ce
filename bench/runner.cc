#include "bench/runner.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "bench/layers.h"
#include "bench/peers.h"
#include "bench/progress.h"
#include "bench/rootless.h"
#include "bench/sandboxes.h"
#include "bench/serve_figures.h"
#include "bench/stats.h"

namespace corral::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Prepared {
  std::unique_ptr<Launcher> launcher;
  bool ok = false;
  std::string reason;
};

std::string NowIso() {
  char buf[32];
  time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Latency of every prepared launcher on one workload: warm-up, then `rounds` rounds in
// rotated order. A launcher failing once is marked failed (its samples would no longer
// pair with the others').
WorkloadResult MeasureWorkload(std::vector<Prepared>& launchers, const Workload& w, int rounds,
                               int pause_ms, Progress& progress) {
  WorkloadResult result;
  result.workload = w.name;
  std::vector<size_t> active;
  for (size_t i = 0; i < launchers.size(); ++i) {
    auto& p = launchers[i];
    LatencyEntry e;
    e.name = p.launcher->name();
    e.group = p.launcher->group();
    e.description = p.launcher->description();
    if (!p.ok) {
      e.status = EntryStatus::kSkipped;
      e.reason = p.reason;
    } else if (auto why = p.launcher->Unsupported(w)) {
      e.status = EntryStatus::kSkipped;
      e.reason = *why;
    } else {
      for (int k = 0; k < 2 && e.status == EntryStatus::kOk; ++k) {
        Status s = p.launcher->Launch(w);
        if (!s) {
          e.status = EntryStatus::kFailed;
          e.reason = s.error().message();
        }
      }
      if (e.status == EntryStatus::kOk) active.push_back(i);
    }
    result.entries.push_back(std::move(e));
  }
  for (int r = 0; r < rounds; ++r) {
    progress.Update("latency " + w.name + ": round " + std::to_string(r + 1) + "/" +
                    std::to_string(rounds));
    for (size_t k : InterleavedOrder(active.size(), static_cast<size_t>(r))) {
      const size_t i = active[k];
      LatencyEntry& e = result.entries[i];
      if (e.status != EntryStatus::kOk) continue;
      if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      auto t0 = Clock::now();
      Status s = launchers[i].launcher->Launch(w);
      const double ms = MsSince(t0);
      launchers[i].launcher->Settle();
      if (!s) {
        e.status = EntryStatus::kFailed;
        e.reason = "round " + std::to_string(r + 1) + ": " + s.error().message();
        continue;
      }
      e.samples_ms.push_back(ms);
    }
  }
  for (auto& e : result.entries) {
    if (e.status == EntryStatus::kOk) {
      e.summary = Summarize(e.samples_ms);
    } else {
      e.samples_ms.clear();
    }
  }
  return result;
}

// `workers` threads launching back to back for `seconds`; launches/s, or an error.
Result<double> ThroughputSlice(Launcher& l, const Workload& w, int workers, double seconds) {
  std::atomic<int64_t> done{0};
  std::mutex mu;
  std::optional<Error> failure;
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&] {
      while (Clock::now() < deadline) {
        Status s = l.Launch(w);
        if (!s) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failure) failure = s.error();
          return;
        }
        done.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = MsSince(t0) / 1000.0;
  if (failure) return *failure;
  return static_cast<double>(done.load()) / elapsed;
}

std::vector<ThroughputEntry> MeasureThroughput(std::vector<Prepared>& launchers, const Workload& w,
                                               const BenchOptions& o, const WorkloadResult& latency,
                                               Progress& progress) {
  std::vector<ThroughputEntry> out;
  std::vector<size_t> active;
  for (size_t i = 0; i < launchers.size(); ++i) {
    auto& l = *launchers[i].launcher;
    const LatencyEntry* lat = FindEntry(latency, l.name());
    if (!l.thread_safe() || lat == nullptr) continue;
    ThroughputEntry e;
    e.name = l.name();
    e.workers = o.workers;
    if (lat->status != EntryStatus::kOk) {
      e.status = lat->status;
      e.reason = lat->reason;
    } else {
      active.push_back(out.size());
    }
    out.push_back(e);
  }
  std::vector<size_t> index_of;  // out[] index -> launchers[] index
  for (size_t i = 0; i < launchers.size(); ++i) {
    if (launchers[i].launcher->thread_safe() && FindEntry(latency, launchers[i].launcher->name()))
      index_of.push_back(i);
  }
  std::vector<double> seconds(out.size(), 0), launches(out.size(), 0);
  for (int r = 0; r < o.throughput_rounds; ++r) {
    for (size_t k : InterleavedOrder(active.size(), static_cast<size_t>(r))) {
      const size_t j = active[k];
      ThroughputEntry& e = out[j];
      if (e.status != EntryStatus::kOk) continue;
      progress.Update("throughput " + e.name + " (" + std::to_string(o.workers) +
                      " workers): slice " + std::to_string(r + 1) + "/" +
                      std::to_string(o.throughput_rounds));
      auto rate = ThroughputSlice(*launchers[index_of[j]].launcher, w, o.workers, o.slice_seconds);
      if (!rate) {
        e.status = EntryStatus::kFailed;
        e.reason = rate.error().message();
        continue;
      }
      e.slice_rates.push_back(*rate);
      seconds[j] += o.slice_seconds;
      launches[j] += *rate * o.slice_seconds;
    }
  }
  for (size_t j = 0; j < out.size(); ++j) {
    if (out[j].status == EntryStatus::kOk && seconds[j] > 0)
      out[j].launches_per_s = launches[j] / seconds[j];
  }
  return out;
}

}  // namespace

BenchOptions ResolveOptions(BenchOptions o) {
  if (o.rounds <= 0) o.rounds = o.quick ? 8 : 60;
  if (o.workers <= 0) o.workers = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  if (o.sandboxes < 0) o.sandboxes = o.quick ? 10 : 100;
  if (o.serve_sandboxes < 0) o.serve_sandboxes = o.quick ? 5 : 50;
  if (o.slice_seconds <= 0) o.slice_seconds = o.quick ? 0.5 : 1.5;
  if (o.throughput_rounds <= 0) o.throughput_rounds = o.quick ? 1 : 3;
  return o;
}

MachineInfo DescribeMachine() {
  MachineInfo m;
  struct utsname u;
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  m.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemTotal:", 0) == 0) m.memory_bytes = std::stoll(line.substr(9)) * 1024;
  }
  const bool v2_root = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
  const bool unified = access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0;
  m.cgroup_mode = v2_root   ? "v2 (unified)"
                  : unified ? "hybrid (v1 controllers, v2 at /sys/fs/cgroup/unified)"
                            : "v1";
  return m;
}

Result<BenchResults> RunBench(const BenchOptions& options) {
  const BenchOptions o = ResolveOptions(options);
  const auto t0 = Clock::now();
  Progress progress;
  BenchResults results;
  results.command = o.command;
  results.started_at = NowIso();
  results.machine = DescribeMachine();
  results.machine.load_start = ReadLoadAverage();
  const auto steal_start = ReadStealJiffies();
  results.rounds = o.rounds;
  results.pause_ms = o.pause_ms;
  results.workers = o.workers;

  std::vector<Prepared> launchers;
  for (auto& l : MakeLadder(o.corral_exe)) launchers.push_back({std::move(l), false, ""});
  if (o.peers) {
    for (auto& l : MakePeers()) launchers.push_back({std::move(l), false, ""});
    for (auto& l : MakeRootlessRows(o.corral_exe)) launchers.push_back({std::move(l), false, ""});
  }
  for (auto& p : launchers) {
    progress.Update("preparing " + p.launcher->name());
    Status s = p.launcher->Prepare();
    p.ok = s.has_value();
    if (!s) p.reason = s.error().message();
  }

  const std::vector<Workload> workloads = DefaultWorkloads();
  for (const auto& w : workloads) {
    results.latency.push_back(MeasureWorkload(launchers, w, o.rounds, o.pause_ms, progress));
  }
  results.throughput =
      MeasureThroughput(launchers, workloads.front(), o, results.latency.front(), progress);
  for (auto& p : launchers) {
    progress.Update("cleaning up " + p.launcher->name());
    p.launcher->Cleanup();
  }
  if (o.sandboxes > 0) {
    results.sandboxes = MeasureSandboxes(o.corral_exe, o.sandboxes, progress);
  } else {
    results.sandboxes.reason = "skipped (--sandboxes 0)";
  }
  if (o.serve_sandboxes > 0) {
    results.serve = MeasureServe(o.corral_exe, o.serve_sandboxes, o.quick ? 20 : 100, progress);
  } else {
    results.serve.reason = "skipped (--serve-sandboxes 0)";
  }
  progress.Done();
  results.machine.load_end = ReadLoadAverage();
  if (const auto steal_end = ReadStealJiffies(); steal_start && steal_end) {
    const uint64_t total = steal_end->second - steal_start->second;
    if (total > 0) {
      results.machine.steal_percent =
          100.0 * static_cast<double>(steal_end->first - steal_start->first) / total;
    }
  }
  EvaluateTargets(&results);
  results.duration_s = MsSince(t0) / 1000.0;
  return results;
}

}  // namespace corral::bench
