// The report side of the daemon's figures: targets, text section, JSON (serve_figures.h).
#include <cstdio>

#include "bench/serve_figures.h"
#include "bench/stats.h"

namespace corral::bench {

using nlohmann::json;

void AddServeTargets(const ServeFigures& f, std::vector<TargetResult>* targets) {
  const std::string why_not = f.reason.empty() ? "skipped" : f.reason;
  targets->push_back(MedianTarget("serve: POST /api/sandboxes -> first shell/exec",
                                  f.create_to_exec_ms, 20,
                                  "median, DeerFlow's Docker path ~3.7 s"));
  TargetResult fresh =
      MedianTarget("serve: shell/exec `true` round trip", f.exec_fresh_paused_ms, 3,
                   "median, fresh session per call as DeerFlow calls it, " +
                       std::to_string(kServePauseMs) + " ms between calls");
  if (!f.exec_fresh_ms.empty()) {
    fresh.note += "; back to back " + Fmt("%.2f ms", Summarize(f.exec_fresh_ms).median);
  }
  if (!f.exec_session_ms.empty()) {
    fresh.note += "; in one live session " + Fmt("%.2f ms", Summarize(f.exec_session_ms).median);
  }
  targets->push_back(fresh);

  TargetResult rss;
  rss.name = "serve: daemon RSS with 1000 idle sandboxes";
  rss.unit = "MiB";
  rss.target = "<= 100.00 MiB";
  // From a handful of sandboxes the growth is the daemon's own first-use allocations, not
  // a per-sandbox cost: no estimate below 100.
  if (f.status == EntryStatus::kOk && f.daemon_rss_idle_bytes && f.daemon_rss_start_bytes &&
      f.created >= 100) {
    rss.measured = true;
    const double per = (*f.daemon_rss_idle_bytes - *f.daemon_rss_start_bytes) / f.created;
    rss.estimate = f.created < 1000;
    rss.value =
        (rss.estimate ? *f.daemon_rss_start_bytes + per * 1000 : *f.daemon_rss_idle_bytes) / kMiB;
    rss.pass = !rss.estimate && rss.value <= 100;
    rss.note = rss.estimate ? "estimate: start + 1000 x the growth per sandbox over " +
                                  std::to_string(f.created) + "; --serve-sandboxes 1000 measures it"
                            : "measured with " + std::to_string(f.created);
  } else {
    rss.note = f.created > 0 && f.created < 100
                   ? "not measured: needs --serve-sandboxes >= 100 (1000 to judge it)"
                   : "not measured: " + why_not;
  }
  targets->push_back(rss);

  const bool ok = f.status == EntryStatus::kOk;
  targets->push_back(IdleMemoryTarget("serve: host memory per idle sandbox",
                                      ok ? f.mem_available_per_sandbox_bytes : std::nullopt,
                                      std::nullopt, f.created, why_not));
  targets->push_back(BringUpTarget("serve: 10000 sandboxes up (create + first exec)", 10000, 60.0,
                                   ok, f.created, f.bring_up_s, why_not, ", one client",
                                   ", one client"));
}

std::string FormatServe(const ServeFigures& f) {
  std::string out = "\ncorral serve (HTTP on loopback): ";
  if (f.status == EntryStatus::kSkipped) return out + "skipped: " + f.reason + "\n";
  out += std::to_string(f.created) + "/" + std::to_string(f.requested) +
         " sandboxes, each created and its first shell/exec answered, in " +
         Fmt("%.2f s", f.bring_up_s) + "\n";
  auto row = [&](const char* name, const std::vector<double>& v) {
    if (v.empty()) return;
    Summary s = Summarize(v);
    out += std::string("  ") + name + Fmt("median %.2f ms", s.median) +
           Fmt(", p90 %.2f ms", s.p90) + " (" + std::to_string(v.size()) + ")\n";
  };
  row("POST /api/sandboxes -> first shell/exec  ", f.create_to_exec_ms);
  row("shell/exec `true`, fresh session        ", f.exec_fresh_ms);
  row("  the same, 200 ms between calls         ", f.exec_fresh_paused_ms);
  row("shell/exec `true`, same session         ", f.exec_session_ms);
  if (f.daemon_rss_start_bytes && f.daemon_rss_idle_bytes) {
    out += "  daemon RSS " + Fmt("%.1f MiB", *f.daemon_rss_start_bytes / kMiB) + " at start, " +
           Fmt("%.1f MiB", *f.daemon_rss_idle_bytes / kMiB) + " with " + std::to_string(f.created) +
           " idle sandboxes\n";
  }
  if (f.mem_available_per_sandbox_bytes) {
    out += "  host memory per idle sandbox (MemAvailable drop) " +
           Fmt("%.2f MiB", *f.mem_available_per_sandbox_bytes / kMiB) + "\n";
  }
  if (!f.reason.empty()) out += "  note: " + f.reason + "\n";
  return out;
}

nlohmann::json ServeJson(const ServeFigures& f) {
  auto opt = [](std::optional<double> v) { return v ? json(*v) : json(nullptr); };
  return {{"status", EntryStatusName(f.status)},
          {"reason", f.reason},
          {"requested", f.requested},
          {"created", f.created},
          {"bring_up_s", f.bring_up_s},
          {"create_to_first_exec_ms", f.create_to_exec_ms},
          {"exec_fresh_session_ms", f.exec_fresh_ms},
          {"exec_fresh_session_paused_ms", f.exec_fresh_paused_ms},
          {"pause_ms", kServePauseMs},
          {"exec_same_session_ms", f.exec_session_ms},
          {"daemon_rss_start_bytes", opt(f.daemon_rss_start_bytes)},
          {"daemon_rss_idle_bytes", opt(f.daemon_rss_idle_bytes)},
          {"mem_available_per_sandbox_bytes", opt(f.mem_available_per_sandbox_bytes)}};
}

}  // namespace corral::bench
