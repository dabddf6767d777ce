#include "bench/report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench/launcher.h"

namespace corral::bench {
namespace {

using nlohmann::json;

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}
std::string PadLeft(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string RatioCell(const WorkloadResult& w, const std::string& a, const char* b) {
  if (a == b) return "1.00";
  auto r = RatioBetween(w, a, b);
  return r ? Fmt("%.2f", r->median_ratio) : "-";
}

std::string MiB(std::optional<double> bytes) {
  return bytes ? Fmt("%.2f MiB", *bytes / (1024.0 * 1024.0)) : "-";
}

void LatencyTable(const WorkloadResult& w, std::string& out) {
  out += "\nlatency: " + w.workload + " (ms; ratios = median of per-round ratios)\n";
  out += Pad("  launcher", 34) + PadLeft("median", 9) + PadLeft("p90", 9) + PadLeft("p99", 9) +
         PadLeft("x bare", 8) + PadLeft("x bwrap", 9) + "\n";
  for (const auto& e : w.entries) {
    std::string line = Pad("  " + e.name, 34);
    if (e.status == EntryStatus::kOk) {
      line += PadLeft(Fmt("%.2f", e.summary.median), 9) + PadLeft(Fmt("%.2f", e.summary.p90), 9) +
              PadLeft(Fmt("%.2f", e.summary.p99), 9) + PadLeft(RatioCell(w, e.name, kBareName), 8) +
              PadLeft(RatioCell(w, e.name, kBwrapName), 9);
    } else {
      line += "  " + std::string(EntryStatusName(e.status)) + ": " + e.reason;
    }
    out += line + "\n";
  }
}

json SummaryJson(const Summary& s) {
  return {{"count", s.count}, {"min", s.min}, {"median", s.median}, {"p90", s.p90},
          {"p99", s.p99},     {"max", s.max}, {"mean", s.mean}};
}

json RatioJson(std::optional<PairedRatio> r) {
  if (!r) return nullptr;
  return {{"median", r->median_ratio}, {"p10", r->low}, {"p90", r->high}, {"pairs", r->pairs}};
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string FormatTable(const BenchResults& r) {
  std::string out;
  const MachineInfo& m = r.machine;
  out += "corral bench — " + r.started_at + "\n";
  out += "machine: " + m.kernel + ", " + std::to_string(m.cores) + " cores (" + m.cpu_model +
         "), " + Fmt("%.1f GiB", static_cast<double>(m.memory_bytes) / (1 << 30)) + ", cgroups " +
         m.cgroup_mode + "\n";
  out += "command: " + r.command + "\n";
  out += "rounds: " + std::to_string(r.rounds) + " interleaved per workload" +
         (r.pause_ms > 0 ? ", " + std::to_string(r.pause_ms) + " ms idle before each launch" : "") +
         "; workers: " + std::to_string(r.workers) + "\n";
  for (const auto& w : r.latency) LatencyTable(w, out);

  if (!r.throughput.empty()) {
    out += "\nthroughput: /bin/true, " + std::to_string(r.workers) + " workers\n";
    for (const auto& t : r.throughput) {
      std::string line = Pad("  " + t.name, 34);
      line += t.status == EntryStatus::kOk
                  ? PadLeft(Fmt("%.1f/s", t.launches_per_s), 10)
                  : "  " + std::string(EntryStatusName(t.status)) + ": " + t.reason;
      out += line + "\n";
    }
  }
  const SandboxFigures& s = r.sandboxes;
  out += "\npersistent sandboxes: ";
  if (s.status == EntryStatus::kSkipped) {
    out += "skipped: " + s.reason + "\n";
  } else {
    out += std::to_string(s.created) + "/" + std::to_string(s.requested) + " up in " +
           Fmt("%.2f s", s.bring_up_s) + " (" + std::to_string(s.concurrency) +
           " creates in flight), removed in " + Fmt("%.2f s", s.remove_s) + "\n";
    out += "  idle memory per sandbox: MemAvailable drop " +
           MiB(s.mem_available_per_sandbox_bytes) + ", cgroup usage " +
           MiB(s.cgroup_memory_per_sandbox_bytes) + ", init PSS " +
           MiB(s.init_pss_per_sandbox_bytes) + "\n";
    if (!s.reason.empty()) out += "  note: " + s.reason + "\n";
  }
  out += "\ntargets (issue 6):\n";
  for (const auto& t : r.targets) {
    std::string line = Pad("  " + t.name, 52) + Pad(t.target, 13);
    if (t.measured) {
      line += PadLeft(Fmt(t.unit == "x" ? "%.2fx" : "%.2f", t.value) +
                          (t.unit == "x" ? "" : " " + t.unit),
                      11) +
              (t.pass ? "  PASS" : "  MISS");
    } else {
      line += "  n/a ";
    }
    out += line + "  (" + t.note + ")\n";
  }
  return out;
}

std::string ToJson(const BenchResults& r) {
  json j;
  j["command"] = r.command;
  j["started_at"] = r.started_at;
  j["duration_s"] = r.duration_s;
  j["machine"] = {{"kernel", r.machine.kernel},
                  {"cpu_model", r.machine.cpu_model},
                  {"cores", r.machine.cores},
                  {"memory_bytes", r.machine.memory_bytes},
                  {"cgroup_mode", r.machine.cgroup_mode}};
  j["settings"] = {{"rounds", r.rounds}, {"pause_ms", r.pause_ms}, {"workers", r.workers}};
  j["latency"] = json::array();
  for (const auto& w : r.latency) {
    json entries = json::array();
    for (const auto& e : w.entries) {
      json je = {{"name", e.name},
                 {"group", e.group},
                 {"description", e.description},
                 {"status", EntryStatusName(e.status)}};
      if (e.status == EntryStatus::kOk) {
        je["summary_ms"] = SummaryJson(e.summary);
        je["ratio_vs_bare"] = RatioJson(RatioBetween(w, e.name, kBareName));
        je["ratio_vs_bwrap"] = RatioJson(RatioBetween(w, e.name, kBwrapName));
        je["samples_ms"] = e.samples_ms;
      } else {
        je["reason"] = e.reason;
      }
      entries.push_back(je);
    }
    j["latency"].push_back({{"workload", w.workload}, {"entries", entries}});
  }
  j["throughput"] = json::array();
  for (const auto& t : r.throughput) {
    json jt = {{"name", t.name}, {"status", EntryStatusName(t.status)}, {"workers", t.workers}};
    if (t.status == EntryStatus::kOk) {
      jt["launches_per_s"] = t.launches_per_s;
      jt["slice_rates"] = t.slice_rates;
    } else {
      jt["reason"] = t.reason;
    }
    j["throughput"].push_back(jt);
  }
  const SandboxFigures& s = r.sandboxes;
  auto opt = [](std::optional<double> v) { return v ? json(*v) : json(nullptr); };
  j["sandboxes"] = {{"status", EntryStatusName(s.status)},
                    {"reason", s.reason},
                    {"requested", s.requested},
                    {"created", s.created},
                    {"concurrency", s.concurrency},
                    {"bring_up_s", s.bring_up_s},
                    {"remove_s", s.remove_s},
                    {"mem_available_per_sandbox_bytes", opt(s.mem_available_per_sandbox_bytes)},
                    {"cgroup_memory_per_sandbox_bytes", opt(s.cgroup_memory_per_sandbox_bytes)},
                    {"init_pss_per_sandbox_bytes", opt(s.init_pss_per_sandbox_bytes)}};
  j["targets"] = json::array();
  for (const auto& t : r.targets) {
    j["targets"].push_back({{"name", t.name},
                            {"target", t.target},
                            {"measured", t.measured},
                            {"value", t.measured ? json(t.value) : json(nullptr)},
                            {"unit", t.unit},
                            {"pass", t.measured ? json(t.pass) : json(nullptr)},
                            {"note", t.note}});
  }
  return j.dump(2) + "\n";
}

std::string ToSvg(const BenchResults& r) {
  constexpr int kWidth = 900, kLabel = 260, kBarH = 16, kGap = 4, kPanelHead = 34;
  constexpr int kPlot = kWidth - kLabel - 90;
  int height = 50;
  for (const auto& w : r.latency)
    height += kPanelHead + static_cast<int>(w.entries.size()) * (kBarH + kGap) + 10;
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(kWidth) +
         "\" height=\"" + std::to_string(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" +
         XmlEscape("corral bench: median launch latency (ms) — " + r.machine.kernel + ", " +
                   std::to_string(r.machine.cores) + " cores, cgroups " + r.machine.cgroup_mode) +
         "</text>\n";
  int y = 50;
  for (const auto& w : r.latency) {
    double max_ms = 0;
    for (const auto& e : w.entries)
      if (e.status == EntryStatus::kOk) max_ms = std::max(max_ms, e.summary.median);
    svg += "<text x=\"10\" y=\"" + std::to_string(y + 16) + "\" font-weight=\"bold\">" +
           XmlEscape(w.workload) + "</text>\n";
    y += kPanelHead;
    for (const auto& e : w.entries) {
      const std::string fill = e.group == "peer" ? "#8c8c8c"
                               : (e.name.rfind("corral", 0) == 0 ||
                                  e.name.rfind("runtime", 0) == 0 || e.name.rfind("tool", 0) == 0)
                                   ? "#d9480f"
                                   : "#1c7ed6";
      svg += "<text x=\"" + std::to_string(kLabel - 6) + "\" y=\"" + std::to_string(y + 12) +
             "\" text-anchor=\"end\">" + XmlEscape(e.name) + "</text>\n";
      if (e.status == EntryStatus::kOk && max_ms > 0) {
        const int len = std::max(1, static_cast<int>(e.summary.median / max_ms * kPlot));
        svg += "<rect x=\"" + std::to_string(kLabel) + "\" y=\"" + std::to_string(y) +
               "\" width=\"" + std::to_string(len) + "\" height=\"" + std::to_string(kBarH) +
               "\" fill=\"" + fill + "\"/>\n";
        svg += "<text x=\"" + std::to_string(kLabel + len + 4) + "\" y=\"" +
               std::to_string(y + 12) + "\">" + Fmt("%.2f", e.summary.median) + "</text>\n";
      } else {
        svg += "<text x=\"" + std::to_string(kLabel) + "\" y=\"" + std::to_string(y + 12) +
               "\" fill=\"#999\">" +
               XmlEscape(std::string(EntryStatusName(e.status)) + ": " + e.reason.substr(0, 80)) +
               "</text>\n";
      }
      y += kBarH + kGap;
    }
    y += 10;
  }
  svg += "</svg>\n";
  return svg;
}

Status WriteReports(const BenchResults& r, const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Error::FromErrno(errno, "--out " + dir);
  RETURN_IF_ERROR(WriteRegularFile(dir + "/bench.json", ToJson(r)));
  RETURN_IF_ERROR(WriteRegularFile(dir + "/bench.svg", ToSvg(r)));
  return Ok();
}

}  // namespace corral::bench
