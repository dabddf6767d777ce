#include "bench/scale.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "bench/launcher.h"
#include "bench/runner.h"
#include "bench/sandboxes.h"
#include "bench/stats.h"
#include "runtime/sandboxes/persistent.h"

namespace corral::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int64_t kMinMarginBytes = int64_t{2} << 30;
// Until a step has measured one, what a sandbox is assumed to cost when deciding whether
// the next step fits; the measured figure replaces it (with the same headroom factor).
constexpr double kAssumedBytesPerSandbox = 3 * kMiB;
constexpr double kHeadroom = 1.5;
// A drop in MemAvailable smaller than this is not read as the sandboxes' cost.
constexpr int64_t kNoiseBytes = int64_t{64} << 20;
constexpr int kMaxStep = 100000;

// Set by SIGINT/SIGTERM while the scale run is on: no more creates, removal still runs.
volatile sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

class StopSignals {
 public:
  StopSignals() {
    g_stop = 0;
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Runs task(i) for every i in [begin, end) from `workers` threads; returns the indices
// whose task failed, and the first error. `stoppable`: a signal ends it early (creates);
// removal always runs to the end.
struct Batch {
  std::vector<int> failed;
  std::vector<int> done;
  std::string first_error;
  bool stopped_low_memory = false;
};
Batch RunParallel(int begin, int end, int workers, bool stoppable, int64_t margin_bytes,
                  const std::string& label, Progress& progress,
                  const std::function<Status(int)>& task) {
  Batch out;
  std::atomic<int> next{begin};
  std::atomic<int> finished{0};
  std::mutex mu;
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min(workers, end - begin));
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < end;) {
        if (stoppable && g_stop) break;
        Status s = task(i);
        std::lock_guard<std::mutex> lock(mu);
        if (s) {
          out.done.push_back(i);
        } else {
          out.failed.push_back(i);
          if (out.first_error.empty()) out.first_error = s.error().message();
        }
        finished.fetch_add(1);
      }
    });
  }
  while (finished.load() < end - begin) {
    progress.Update(label + " " + std::to_string(finished.load()) + "/" +
                    std::to_string(end - begin));
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (stoppable && g_stop) break;
    // The step's estimate can be wrong (memory per sandbox grows with their number): the
    // margin is also watched while the step runs.
    const auto available = ReadMemAvailableBytes();
    if (stoppable && margin_bytes > 0 && available && *available < margin_bytes) {
      out.stopped_low_memory = true;
      g_stop = 1;
      break;
    }
  }
  for (auto& t : threads) t.join();
  std::sort(out.done.begin(), out.done.end());
  return out;
}

std::string Mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / kMiB);
  return buf;
}

std::string Gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (kMiB * 1024));
  return buf;
}

std::string Ms(const std::optional<double>& ms) {
  if (!ms) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", *ms);
  return buf;
}

std::string Seconds(double s, int count) {
  char buf[64];
  if (count > 0 && s > 0) {
    std::snprintf(buf, sizeof buf, "%.1f s (%.0f/s)", s, count / s);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  }
  return buf;
}

std::string WithCommas(int n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

bool IsCgroupV2(const MachineInfo& m) { return m.cgroup_mode.rfind("v2", 0) == 0; }

constexpr int kProbeLaunches = 7;

// The median wall time of `count` runs of argv, one after the other; nullopt if one fails.
std::optional<double> MedianMs(int count, const std::vector<std::string>& argv) {
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    if (!SpawnAndWait(argv)) return std::nullopt;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

Result<std::vector<int>> ParseScaleSteps(const std::string& text) {
  std::vector<int> steps;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    int value = 0;
    size_t used = 0;
    try {
      value = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    if (item.empty() || used != item.size() || value <= 0 || value > kMaxStep) {
      return Error(ErrorCode::kInvalidArgument,
                   "--scale: \"" + item + "\" is not a number of sandboxes from 1 to " +
                       std::to_string(kMaxStep) + " (steps are comma-separated: 1000,4000,10000)");
    }
    if (!steps.empty() && value <= steps.back()) {
      return Error(ErrorCode::kInvalidArgument, "--scale: steps must grow (" +
                                                    std::to_string(value) + " after " +
                                                    std::to_string(steps.back()) + ")");
    }
    steps.push_back(value);
    start = end + 1;
  }
  return steps;
}

ScaleFigures MeasureScale(const ScaleOptions& o, Progress& progress) {
  ScaleFigures f;
  f.machine = DescribeMachine();
  f.workers = o.workers;
  f.margin_bytes = std::max<int64_t>(kMinMarginBytes, f.machine.memory_bytes / 10);
  StopSignals signals;
  const std::string prefix = "corral-scale-" + std::to_string(getpid()) + "-";
  auto name = [&](int i) { return prefix + std::to_string(i); };

  progress.Update("scale: settling memory");
  f.mem_available_start_bytes = SettledMemAvailable();
  f.slab_unreclaimable_start_bytes = ReadKbField("/proc/meminfo", "SUnreclaim:");
  std::vector<std::vector<int>> made;  // per step: the indices of the sandboxes it made
  int next_index = 0;
  int up = 0;
  double per_sandbox = kAssumedBytesPerSandbox;
  for (int target : o.steps) {
    if (g_stop) break;
    const int wanted = target - up;
    if (wanted <= 0) continue;
    const auto available = ReadMemAvailableBytes();
    const double needed = wanted * per_sandbox * kHeadroom;
    if (!available || *available - needed < f.margin_bytes) {
      f.reason = "the step to " + WithCommas(target) + " sandboxes was not started: it needs " +
                 "about " + Gib(needed) + " and would leave less than the " +
                 Gib(static_cast<double>(f.margin_bytes)) + " kept free (MemAvailable " +
                 (available ? Gib(static_cast<double>(*available)) : std::string("unknown")) + ")";
      break;
    }
    ScaleStep step;
    step.target = target;
    const auto t0 = Clock::now();
    Batch batch =
        RunParallel(next_index, next_index + wanted, o.workers, /*stoppable=*/true, f.margin_bytes,
                    "scale: creating toward " + WithCommas(target), progress, [&](int i) {
                      return SpawnAndWait({o.corral_exe, "create", "--name", name(i)});
                    });
    step.up_s = std::chrono::duration<double>(Clock::now() - t0).count();
    next_index += wanted;
    up += static_cast<int>(batch.done.size());
    step.up = up;
    step.failed = static_cast<int>(batch.failed.size());
    // A failed create may have got as far as a sandbox: removed with the step's own.
    std::vector<int> step_names = batch.done;
    step_names.insert(step_names.end(), batch.failed.begin(), batch.failed.end());
    made.push_back(std::move(step_names));
    if (batch.stopped_low_memory) {
      f.reason = "the step to " + WithCommas(target) + " was stopped at " + WithCommas(up) +
                 " sandboxes: MemAvailable fell below the " +
                 Gib(static_cast<double>(f.margin_bytes)) + " kept free";
    }
    if (!batch.first_error.empty() && f.reason.empty()) {
      f.reason = std::to_string(batch.failed.size()) + " creates failed toward " +
                 WithCommas(target) + ": " + batch.first_error;
    }
    progress.Update("scale: measuring " + WithCommas(up) + " idle sandboxes");
    const auto available_now = SettledMemAvailable();
    // Below the noise of MemAvailable (page cache, other tenants) a figure would mislead.
    if (available_now && f.mem_available_start_bytes && up > 0 &&
        *f.mem_available_start_bytes - *available_now >= kNoiseBytes) {
      step.host_bytes_per_sandbox =
          static_cast<double>(*f.mem_available_start_bytes - *available_now) / up;
      per_sandbox = *step.host_bytes_per_sandbox;
    }
    step.slab_unreclaimable_bytes = ReadKbField("/proc/meminfo", "SUnreclaim:");
    progress.Update("scale: timing a run and an exec beside " + WithCommas(up) + " sandboxes");
    step.cold_run_ms = MedianMs(kProbeLaunches, {o.corral_exe, "run", "--", "/bin/true"});
    if (!batch.done.empty()) {
      step.exec_ms = MedianMs(kProbeLaunches,
                              {o.corral_exe, "exec", name(batch.done.front()), "--", "/bin/true"});
    }
    step.ps_ms = MedianMs(1, {o.corral_exe, "ps"});
    f.steps.push_back(step);
    if (batch.done.empty()) break;  // nothing comes up: the next step would not either
  }
  if (g_stop && f.reason.empty()) f.reason = "stopped by a signal; what was made is removed";

  // Down, step by step, newest first: each step's figure is its own sandboxes' removal.
  std::vector<std::string> left;
  for (size_t s = made.size(); s-- > 0;) {
    const std::vector<int>& indices = made[s];
    const auto t0 = Clock::now();
    Batch batch = RunParallel(
        0, static_cast<int>(indices.size()), o.workers, /*stoppable=*/false, 0,
        "scale: removing toward " + (s == 0 ? std::string("0") : WithCommas(f.steps[s - 1].up)),
        progress, [&](int k) {
          return SpawnAndWait({o.corral_exe, "rm", "-f", name(indices[k])});
        });
    if (s < f.steps.size()) {
      f.steps[s].down_s = std::chrono::duration<double>(Clock::now() - t0).count();
      f.steps[s].removed = static_cast<int>(batch.done.size());
    }
    for (int k : batch.failed) {
      // Once more, in this process: a removal that failed beside many others may pass.
      if (!runtime::RemoveSandbox(name(indices[k])) && runtime::InspectSandbox(name(indices[k]))) {
        left.push_back(name(indices[k]));
      }
    }
  }
  f.left_behind = static_cast<int>(left.size());
  if (!left.empty()) {
    f.reason += std::string(f.reason.empty() ? "" : "; ") + std::to_string(left.size()) +
                " sandboxes could not be removed (corral rm them): " + left.front() +
                (left.size() > 1 ? " ..." : "");
  }
  f.status = f.steps.empty() ? EntryStatus::kFailed : EntryStatus::kOk;
  f.goals = JudgeScale(f);
  progress.Done();
  return f;
}

std::vector<ScaleGoal> JudgeScale(const ScaleFigures& f) {
  std::vector<ScaleGoal> goals;
  auto verdict = [](bool pass) { return std::string(pass ? "PASS" : "MISS"); };
  const ScaleStep* first = nullptr;
  const ScaleStep* last = nullptr;
  for (const ScaleStep& s : f.steps) {
    if (!s.host_bytes_per_sandbox) continue;
    if (first == nullptr) first = &s;
    last = &s;
  }
  if (first != nullptr && last != first) {
    const double ratio = *last->host_bytes_per_sandbox / *first->host_bytes_per_sandbox;
    char detail[160];
    std::snprintf(detail, sizeof detail, "%s at %s against %s at %s: %.2fx",
                  Mib(*last->host_bytes_per_sandbox).c_str(), WithCommas(last->up).c_str(),
                  Mib(*first->host_bytes_per_sandbox).c_str(), WithCommas(first->up).c_str(),
                  ratio);
    goals.push_back({"host memory per idle sandbox stays flat (largest step <= 1.25x the first)",
                     verdict(ratio <= 1.25), detail});
  } else {
    goals.push_back({"host memory per idle sandbox stays flat (largest step <= 1.25x the first)",
                     "not judged", "fewer than two steps had a figure above the noise"});
  }
  if (last != nullptr) {
    goals.push_back({"host memory per idle sandbox <= 1.5 MiB at the largest step",
                     verdict(*last->host_bytes_per_sandbox <= 1.5 * kMiB),
                     Mib(*last->host_bytes_per_sandbox) + " at " + WithCommas(last->up)});
  }
  const int made = f.steps.empty() ? 0 : f.steps.back().up;
  int removed = 0;
  double up_s = 0, down_s = 0;
  for (const ScaleStep& s : f.steps) {
    removed += s.removed;
    up_s += s.up_s;
    down_s += s.down_s;
  }
  if (made > 0 && up_s > 0 && down_s > 0) {
    const double up_rate = made / up_s;
    const double down_rate = removed / down_s;
    char detail[160];
    std::snprintf(detail, sizeof detail, "%.0f removed/s against %.0f created/s", down_rate,
                  up_rate);
    goals.push_back(
        {"removal at least as fast as creation", verdict(down_rate >= up_rate), detail});
  }
  const bool big_v2_host = f.machine.cores >= 16 && IsCgroupV2(f.machine);
  const bool reached_10k = !f.steps.empty() && f.steps.back().up >= 10000;
  const char* kTenK = "10,000 sandboxes up in <= 30 s and removed in <= 30 s (16-core cgroup v2)";
  if (big_v2_host && reached_10k) {
    char detail[120];
    std::snprintf(detail, sizeof detail, "up in %.1f s, removed in %.1f s", up_s, down_s);
    goals.push_back({kTenK, verdict(up_s <= 30 && down_s <= 30), detail});
  } else {
    goals.push_back({kTenK, "not judged",
                     std::string(big_v2_host ? ""
                                             : "this host has " + std::to_string(f.machine.cores) +
                                                   " cores and cgroup " + f.machine.cgroup_mode) +
                         (reached_10k ? ""
                                      : (big_v2_host ? "" : "; ") +
                                            std::string("10,000 were not brought up"))});
  }
  return goals;
}

std::string FormatScaleTable(const ScaleFigures& f) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "\nScale: persistent sandboxes in steps (%d workers, %d cores, %s, cgroup %s)\n",
                f.workers, f.machine.cores,
                Gib(static_cast<double>(f.machine.memory_bytes)).c_str(),
                f.machine.cgroup_mode.c_str());
  out += line;
  std::snprintf(line, sizeof line, "%-10s  %-14s  %-18s  %-20s  %-20s  %-9s  %-9s  %-9s\n",
                "sandboxes", "host/sandbox", "SUnreclaim (host)", "up (this step)",
                "down (this step)", "cold run", "exec", "ps");
  out += line;
  if (f.slab_unreclaimable_start_bytes) {
    std::snprintf(line, sizeof line, "%-10s  %-14s  %-18s\n", "0", "",
                  Gib(static_cast<double>(*f.slab_unreclaimable_start_bytes)).c_str());
    out += line;
  }
  int before = 0;
  for (const ScaleStep& s : f.steps) {
    std::string count = WithCommas(s.up);
    if (s.up != s.target) count += " of " + WithCommas(s.target);
    std::snprintf(
        line, sizeof line, "%-10s  %-14s  %-18s  %-20s  %-20s  %-9s  %-9s  %-9s\n", count.c_str(),
        s.host_bytes_per_sandbox ? Mib(*s.host_bytes_per_sandbox).c_str() : "< noise",
        s.slab_unreclaimable_bytes ? Gib(static_cast<double>(*s.slab_unreclaimable_bytes)).c_str()
                                   : "-",
        Seconds(s.up_s, s.up - before).c_str(), Seconds(s.down_s, s.removed).c_str(),
        Ms(s.cold_run_ms).c_str(), Ms(s.exec_ms).c_str(), Ms(s.ps_ms).c_str());
    out += line;
    before = s.up;
  }
  out +=
      "host/sandbox: MemAvailable's drop since the start over the sandboxes up (\"< noise\": "
      "under 64 MiB in all); cold run, exec: medians of " +
      std::to_string(kProbeLaunches) + " `corral run|exec -- /bin/true` beside them\n";
  out +=
      "The kernel sizes each memory cgroup's state by the most filesystems the host has had "
      "at once since boot: compare builds in the same host state (--scale-corral PATH).\n";
  for (const ScaleGoal& g : f.goals) {
    out += "  " + g.verdict + "  " + g.what + (g.detail.empty() ? "" : ": " + g.detail) + "\n";
  }
  if (!f.reason.empty()) out += "  note: " + f.reason + "\n";
  return out;
}

json ScaleToJson(const ScaleFigures& f) {
  json steps = json::array();
  for (const ScaleStep& s : f.steps) {
    json j = {{"target", s.target}, {"up", s.up},         {"failed", s.failed},
              {"up_s", s.up_s},     {"down_s", s.down_s}, {"removed", s.removed}};
    if (s.host_bytes_per_sandbox) j["host_bytes_per_sandbox"] = *s.host_bytes_per_sandbox;
    if (s.slab_unreclaimable_bytes) j["slab_unreclaimable_bytes"] = *s.slab_unreclaimable_bytes;
    if (s.cold_run_ms) j["cold_run_ms"] = *s.cold_run_ms;
    if (s.exec_ms) j["exec_ms"] = *s.exec_ms;
    if (s.ps_ms) j["ps_ms"] = *s.ps_ms;
    steps.push_back(j);
  }
  json goals = json::array();
  for (const ScaleGoal& g : f.goals) {
    goals.push_back({{"what", g.what}, {"verdict", g.verdict}, {"detail", g.detail}});
  }
  json out = {{"status", EntryStatusName(f.status)},
              {"reason", f.reason},
              {"machine",
               {{"kernel", f.machine.kernel},
                {"cores", f.machine.cores},
                {"memory_bytes", f.machine.memory_bytes},
                {"cgroup_mode", f.machine.cgroup_mode}}},
              {"workers", f.workers},
              {"margin_bytes", f.margin_bytes},
              {"steps", steps},
              {"left_behind", f.left_behind},
              {"goals", goals}};
  if (f.mem_available_start_bytes) out["mem_available_start_bytes"] = *f.mem_available_start_bytes;
  if (f.slab_unreclaimable_start_bytes) {
    out["slab_unreclaimable_start_bytes"] = *f.slab_unreclaimable_start_bytes;
  }
  return out;
}

}  // namespace corral::bench
