#include "bench/results.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench/serve_figures.h"
#include "bench/stats.h"

namespace corral::bench {

const char* EntryStatusName(EntryStatus s) {
  switch (s) {
    case EntryStatus::kOk:
      return "ok";
    case EntryStatus::kSkipped:
      return "skipped";
    case EntryStatus::kFailed:
      return "failed";
  }
  return "?";
}

const LatencyEntry* FindEntry(const WorkloadResult& w, const std::string& name) {
  for (const auto& e : w.entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::optional<PairedRatio> RatioBetween(const WorkloadResult& w, const std::string& a,
                                        const std::string& b) {
  const LatencyEntry* ea = FindEntry(w, a);
  const LatencyEntry* eb = FindEntry(w, b);
  if (ea == nullptr || eb == nullptr || ea->status != EntryStatus::kOk ||
      eb->status != EntryStatus::kOk)
    return std::nullopt;
  return ComputePairedRatio(ea->samples_ms, eb->samples_ms);
}

std::optional<std::array<double, 3>> ReadLoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::array<double, 3> load{};
  if (!(in >> load[0] >> load[1] >> load[2])) return std::nullopt;
  return load;
}

std::optional<std::pair<uint64_t, uint64_t>> ReadStealJiffies() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return std::nullopt;
  std::istringstream fields(line.substr(4));
  // user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
  uint64_t v[8] = {};
  for (uint64_t& x : v) {
    if (!(fields >> x)) return std::nullopt;
  }
  uint64_t total = 0;
  for (uint64_t x : v) total += x;
  return std::make_pair(v[7], total);
}

void JudgeWithSpread(TargetResult* t, double q1, double q3, double limit, bool at_most) {
  t->spread = std::make_pair(q1, q3);
  const bool all_meet = at_most ? q3 <= limit : q1 >= limit;
  const bool none_meet = at_most ? q1 > limit : q3 < limit;
  t->pass = all_meet;
  t->unclear = !all_meet && !none_meet;
}

namespace {

TargetResult RatioTarget(const BenchResults& r, const std::string& name, const char* a,
                         const char* b, double limit, bool at_most) {
  TargetResult t;
  t.name = name;
  t.unit = "x";
  t.target = std::string(at_most ? "<= " : ">= ") + Fmt("%.2f", limit) + "x";
  const WorkloadResult* w = r.latency.empty() ? nullptr : &r.latency.front();
  auto ratio = w != nullptr ? RatioBetween(*w, a, b) : std::nullopt;
  if (!ratio) {
    t.note = std::string("not measured: needs both '") + a + "' and '" + b + "'";
    return t;
  }
  t.measured = true;
  t.value = ratio->median_ratio;
  JudgeWithSpread(&t, ratio->q1, ratio->q3, limit, at_most);
  t.note = "median of " + std::to_string(ratio->pairs) + " interleaved pairs, IQR " +
           Fmt("%.2f", ratio->q1) + "-" + Fmt("%.2f", ratio->q3) + ", p10-p90 " +
           Fmt("%.2f", ratio->low) + "-" + Fmt("%.2f", ratio->high);
  return t;
}

const ThroughputEntry* FindThroughput(const BenchResults& r, const std::string& name) {
  for (const auto& e : r.throughput) {
    if (e.name == name && e.status == EntryStatus::kOk) return &e;
  }
  return nullptr;
}

}  // namespace

TargetResult MedianTarget(const std::string& name, const std::vector<double>& samples,
                          double limit_ms, const std::string& note) {
  TargetResult t;
  t.name = name;
  t.unit = "ms";
  t.target = "<= " + Fmt("%.1f", limit_ms) + " ms";
  if (samples.empty()) {
    t.note = "not measured";
    return t;
  }
  t.measured = true;
  t.value = Summarize(samples).median;
  t.pass = t.value <= limit_ms;
  t.note = note + ", " + std::to_string(samples.size()) + " samples";
  return t;
}

// The most disk one fork added before anything was written: <= 1 MiB.
TargetResult ForkDiskTarget(const SandboxFigures& s) {
  TargetResult t;
  t.name = "disk a fork adds, 100 MiB workspace";
  t.unit = "MiB";
  t.target = "<= 1.00 MiB";
  if (!s.fork_extra_bytes) {
    t.note = s.fork_reason.empty() ? "not measured" : "not measured: " + s.fork_reason;
    return t;
  }
  t.measured = true;
  t.value = static_cast<double>(*s.fork_extra_bytes) / (1 << 20);
  t.pass = t.value <= 1.0;
  t.note = "the state directory's use before and after, the most of " +
           std::to_string(s.fork_ms.size()) + " forks";
  return t;
}

TargetResult IdleMemoryTarget(const std::string& name, std::optional<double> bytes_per_sandbox,
                              std::optional<double> cgroup_bytes_per_sandbox, int sandboxes,
                              const std::string& why_not) {
  TargetResult t;
  t.name = name;
  t.unit = "MiB";
  t.target = "<= 1.00 MiB";
  const std::string over = " over " + std::to_string(sandboxes) + " sandboxes";
  if (bytes_per_sandbox && cgroup_bytes_per_sandbox &&
      *cgroup_bytes_per_sandbox > *bytes_per_sandbox) {
    // The drop reads below what the sandboxes' own cgroups are charged: the host's churn
    // (page cache, reclaim) hid part of it. Host memory is at least the charge.
    t.measured = true;
    t.value = *cgroup_bytes_per_sandbox / kMiB;
    t.pass = t.value <= 1.0;
    t.note = "the sandboxes' cgroup charge" + over + " (a lower bound: the MemAvailable drop, " +
             Fmt("%.2f", *bytes_per_sandbox / kMiB) + " MiB, read below it)";
  } else if (bytes_per_sandbox && *bytes_per_sandbox < 0) {
    // MemAvailable rose while the sandboxes came up: the host's own churn (page cache,
    // reclaim) was larger than what they took, so the figure says nothing about them.
    t.value = *bytes_per_sandbox / kMiB;
    t.note = "not measured: MemAvailable rose by " + Fmt("%.2f", -t.value) + " MiB per sandbox" +
             over + " (host noise larger than the figure; bring up more)";
  } else if (bytes_per_sandbox) {
    t.measured = true;
    t.value = *bytes_per_sandbox / kMiB;
    t.pass = t.value <= 1.0;
    t.note =
        "drop in MemAvailable" + over +
        (cgroup_bytes_per_sandbox
             ? " (cgroup charge " + Fmt("%.2f", *cgroup_bytes_per_sandbox / kMiB) + " MiB of it)"
             : std::string());
  } else {
    t.note = "not measured: " + why_not;
  }
  return t;
}

TargetResult BringUpTarget(const std::string& name, int count, double limit_s, bool ok, int created,
                           double bring_up_s, const std::string& why_not,
                           const std::string& estimate_hint, const std::string& how) {
  TargetResult t;
  t.name = name;
  t.unit = "s";
  t.target = "<= " + Fmt("%.1f", limit_s) + " s";
  if (!ok || created <= 0) {
    t.note = "not measured: " + why_not;
    return t;
  }
  t.measured = true;
  t.value = bring_up_s * count / created;
  // Bring-up need not scale linearly (locks, memory, the idle sweep), so a figure from
  // fewer sandboxes is only an estimate: it is shown, not judged.
  t.estimate = created < count;
  t.pass = !t.estimate && t.value <= limit_s;
  t.note = !t.estimate ? "measured" + how
                       : "estimate: extrapolated linearly from " + std::to_string(created) +
                             " in " + Fmt("%.2f s", bring_up_s) + estimate_hint;
  return t;
}

void EvaluateTargets(BenchResults* r) {
  r->targets.clear();
  r->targets.push_back(RatioTarget(*r, "corral run / bwrap, median /bin/true", kCorralRunName,
                                   kBwrapName, 0.5, true));
  r->targets.push_back(RatioTarget(*r, "corral run, pool server / bwrap, median /bin/true",
                                   kCorralPoolRunName, kBwrapName, 0.5, true));
  r->targets.push_back(RatioTarget(*r, "corral exec / bare fork+exec, median /bin/true",
                                   kCorralExecName, kBareName, 2.0, true));
  r->targets.push_back(RatioTarget(*r, "corral exec, pool server / bare, median /bin/true",
                                   kCorralPoolExecName, kBareName, 2.0, true));

  TargetResult tp;
  tp.name = "launches/s corral run / bwrap, " + std::to_string(r->workers) + " workers";
  tp.unit = "x";
  tp.target = ">= 3.00x";
  const ThroughputEntry* c = FindThroughput(*r, kCorralRunName);
  const ThroughputEntry* b = FindThroughput(*r, kBwrapName);
  if (c != nullptr && b != nullptr) {
    auto ratio = ComputePairedRatio(c->slice_rates, b->slice_rates);
    if (ratio) {
      tp.measured = true;
      tp.value = ratio->median_ratio;
      JudgeWithSpread(&tp, ratio->q1, ratio->q3, 3.0, /*at_most=*/false);
      tp.note = Fmt("%.0f/s vs ", c->launches_per_s) + Fmt("%.0f/s", b->launches_per_s) +
                ", median of " + std::to_string(ratio->pairs) + " interleaved slices, IQR " +
                Fmt("%.2f", ratio->q1) + "-" + Fmt("%.2f", ratio->q3);
    }
  } else {
    tp.note = "not measured: needs corral run and bwrap throughput";
  }
  r->targets.push_back(tp);

  const SandboxFigures& s = r->sandboxes;
  const bool ok = s.status == EntryStatus::kOk;
  r->targets.push_back(IdleMemoryTarget("host memory per idle persistent sandbox",
                                        ok ? s.mem_available_per_sandbox_bytes : std::nullopt,
                                        ok ? s.cgroup_memory_per_sandbox_bytes : std::nullopt,
                                        s.created, s.reason));
  r->targets.push_back(BringUpTarget("1000 sandboxes up", 1000, 10.0, ok, s.created, s.bring_up_s,
                                     s.reason, "; run --sandboxes 1000 to measure it", ""));

  // Last, so the rows above keep their places: the same bar as root's, both sides
  // unprivileged (bench/rootless.h).
  r->targets.push_back(RatioTarget(*r, "rootless corral run / bwrap, median /bin/true",
                                   kCorralRootlessRunName, kBwrapRootlessName, 0.5, true));
  r->targets.push_back(RatioTarget(*r, "rootless pooled run / bwrap, median /bin/true",
                                   kCorralRootlessPoolRunName, kBwrapRootlessName, 0.5, true));
  // After those, for the same reason: the sandbox lifecycle (runtime/sandboxes/pause.h).
  r->targets.push_back(MedianTarget("pause a sandbox of 20 processes", s.pause_ms, 10,
                                    "median of the cgroup freeze until the kernel says frozen"));
  r->targets.push_back(MedianTarget("resume a sandbox of 20 processes", s.resume_ms, 10,
                                    "median of the thaw until the kernel says thawed"));
  r->targets.push_back(MedianTarget("corral diff of a workspace with 100 MiB in 1000 files",
                                    s.diff_ms, 100,
                                    "median of the upper layer walked against the host directory"));
  if (s.diff_ms.empty() && !s.diff_reason.empty()) {
    r->targets.back().note = "not measured: " + s.diff_reason;
  }
  r->targets.push_back(MedianTarget("corral fork of that workspace", s.fork_ms, 50,
                                    "median of the snapshot and the new sandbox's create"));
  if (s.fork_ms.empty() && !s.fork_reason.empty()) {
    r->targets.back().note = "not measured: " + s.fork_reason;
  }
  r->targets.push_back(ForkDiskTarget(s));

  AddServeTargets(r->serve, &r->targets);
}

}  // namespace corral::bench
