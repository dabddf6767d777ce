#include "bench/report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench/launcher.h"
#include "bench/serve_figures.h"
#include "bench/stats.h"

namespace corral::bench {
namespace {

using nlohmann::json;

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

// Wide enough for every launcher's name and two spaces (container and rootless rows run
// past the 32 columns that the others fit in).
size_t NameWidth(const BenchResults& r) {
  size_t width = 34;
  for (const auto& w : r.latency) {
    for (const auto& e : w.entries) width = std::max(width, e.name.size() + 4);
  }
  for (const auto& t : r.throughput) width = std::max(width, t.name.size() + 4);
  return width;
}

std::string LoadText(const std::optional<std::array<double, 3>>& load) {
  if (!load) return "unknown";
  return Fmt("%.2f", (*load)[0]) + " " + Fmt("%.2f", (*load)[1]) + " " + Fmt("%.2f", (*load)[2]);
}

// The verdict as bench.json has it; the text table shows pass, miss and unclear in capitals.
std::string Verdict(const TargetResult& t) {
  if (!t.measured) return "n/a";
  if (t.estimate) return "estimate";
  if (t.unclear) return "unclear";
  return t.pass ? "pass" : "miss";
}

std::string VerdictText(const TargetResult& t) {
  if (t.estimate) return "estimate";
  if (t.unclear) return "UNCLEAR";
  return t.pass ? "PASS" : "MISS";
}

std::string MiB(std::optional<double> bytes) {
  return bytes ? Fmt("%.2f MiB", *bytes / (1024.0 * 1024.0)) : "-";
}

void LatencyTable(const WorkloadResult& w, size_t name_width, std::string& out) {
  out += "\nlatency: " + w.workload + " (ms; ratios = median of per-round ratios)\n";
  out += Pad("  launcher", name_width) + PadLeft("median", 9) + PadLeft("p90", 9) +
         PadLeft("p99", 9) + PadLeft("x bare", 8) + PadLeft("x bwrap", 9) + "\n";
  for (const auto& e : w.entries) {
    std::string line = Pad("  " + e.name, name_width);
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

// Rungs 1-6 of the ladder (bench/layers.cc): the bare launcher and the "+layer" ones.
bool IsLadderRung(const LatencyEntry& e) {
  return e.group == "layer" && (e.name == kBareName || e.name.rfind('+', 0) == 0);
}

// What each row is, so the table is not read as one ladder from top to bottom.
void LaunchersSection(const BenchResults& r, size_t name_width, std::string& out) {
  if (r.latency.empty()) return;
  out += "\nlaunchers:\n";
  out +=
      "  rungs 1-6 are cumulative: each does everything the rung above it does plus what its\n"
      "  line names (plain syscalls, bench/layers.cc), so a rung minus the one above is that\n"
      "  layer's cost. The corral rows are each corral's complete default jail reached another\n"
      "  way, and the peer rows other sandboxes: side by side, not further rungs.\n";
  for (const auto& e : r.latency.front().entries) {
    std::string kind = IsLadderRung(e) ? "" : e.group == "peer" ? "peer: " : "corral: ";
    out += Pad("  " + e.name, name_width) + kind + e.description + "\n";
  }
  out +=
      "  order: launcher N leads round N, the others run in an order shuffled per round, so\n"
      "  no row always follows the same one (on cgroup v1 an attach right after another\n"
      "  skips most of an RCU grace-period wait).\n";
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
  out += "host load: load average " + LoadText(m.load_start) + " at the start, " +
         LoadText(m.load_end) + " at the end; CPU steal " +
         (m.steal_percent ? Fmt("%.1f%%", *m.steal_percent) : std::string("unknown")) +
         " over the run (other work on the host moves every figure)\n";
  out += "command: " + r.command + "\n";
  out += "rounds: " + std::to_string(r.rounds) + " interleaved per workload" +
         (r.pause_ms > 0 ? ", " + std::to_string(r.pause_ms) + " ms idle before each launch" : "") +
         "; workers: " + std::to_string(r.workers) + "\n";
  const size_t name_width = NameWidth(r);
  LaunchersSection(r, name_width, out);
  for (const auto& w : r.latency) LatencyTable(w, name_width, out);

  if (!r.throughput.empty()) {
    out += "\nthroughput: /bin/true, " + std::to_string(r.workers) + " workers\n";
    for (const auto& t : r.throughput) {
      std::string line = Pad("  " + t.name, name_width);
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
    if (!s.pause_ms.empty() && !s.resume_ms.empty()) {
      out += "  pause / resume of one holding 20 processes: median " +
             Fmt("%.2f ms", Summarize(s.pause_ms).median) + " / " +
             Fmt("%.2f ms", Summarize(s.resume_ms).median) + " (" +
             std::to_string(s.pause_ms.size()) + " rounds)\n";
    }
    if (!s.diff_ms.empty()) {
      out +=
          "  diff of a workspace overlay with 100 MiB in 1000 new files: median " +
          Fmt("%.2f ms", Summarize(s.diff_ms).median) + " (" + std::to_string(s.diff_ms.size()) +
          " rounds), upper layer " +
          MiB(s.diff_upper_bytes ? std::optional<double>(static_cast<double>(*s.diff_upper_bytes))
                                 : std::nullopt) +
          "\n";
    } else if (!s.diff_reason.empty()) {
      out += "  diff: " + s.diff_reason + "\n";
    }
    if (!s.fork_ms.empty()) {
      out += "  fork of that sandbox: median " + Fmt("%.2f ms", Summarize(s.fork_ms).median) +
             " (" + std::to_string(s.fork_ms.size()) + " rounds), at most " +
             Fmt("%.0f KiB", static_cast<double>(s.fork_extra_bytes.value_or(0)) / 1024) +
             " more disk per fork\n";
    } else if (!s.fork_reason.empty()) {
      out += "  fork: " + s.fork_reason + "\n";
    }
    if (!s.reason.empty()) out += "  note: " + s.reason + "\n";
  }
  out += FormatServe(r.serve);
  out += "\ntargets:\n";
  out +=
      "  (PASS or MISS only when the interquartile range of the per-round figures, where\n"
      "  there are any, is clear of the target; else UNCLEAR)\n";
  for (const auto& t : r.targets) {
    std::string line = Pad("  " + t.name, 52) + Pad(t.target, 13);
    if (t.measured) {
      line += PadLeft(Fmt(t.unit == "x" ? "%.2fx" : "%.2f", t.value) +
                          (t.unit == "x" ? "" : " " + t.unit),
                      11) +
              "  " + Pad(VerdictText(t), 8);
    } else {
      line += "  n/a     ";
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
  auto load_json = [](const std::optional<std::array<double, 3>>& l) {
    return l ? json(*l) : json(nullptr);
  };
  j["host_load"] = {
      {"loadavg_start", load_json(r.machine.load_start)},
      {"loadavg_end", load_json(r.machine.load_end)},
      {"steal_percent", r.machine.steal_percent ? json(*r.machine.steal_percent) : json(nullptr)}};
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
  j["sandboxes"] = {
      {"status", EntryStatusName(s.status)},
      {"reason", s.reason},
      {"requested", s.requested},
      {"created", s.created},
      {"concurrency", s.concurrency},
      {"bring_up_s", s.bring_up_s},
      {"remove_s", s.remove_s},
      {"mem_available_per_sandbox_bytes", opt(s.mem_available_per_sandbox_bytes)},
      {"cgroup_memory_per_sandbox_bytes", opt(s.cgroup_memory_per_sandbox_bytes)},
      {"init_pss_per_sandbox_bytes", opt(s.init_pss_per_sandbox_bytes)},
      {"pause_ms", s.pause_ms},
      {"resume_ms", s.resume_ms},
      {"diff_ms", s.diff_ms},
      {"diff_upper_bytes", s.diff_upper_bytes ? json(*s.diff_upper_bytes) : json(nullptr)},
      {"fork_ms", s.fork_ms},
      {"fork_extra_bytes", s.fork_extra_bytes ? json(*s.fork_extra_bytes) : json(nullptr)}};
  j["serve"] = ServeJson(r.serve);
  j["targets"] = json::array();
  for (const auto& t : r.targets) {
    j["targets"].push_back(
        {{"name", t.name},
         {"target", t.target},
         {"measured", t.measured},
         {"value", t.measured ? json(t.value) : json(nullptr)},
         {"unit", t.unit},
         {"estimate", t.estimate},
         {"pass", t.measured && !t.estimate && !t.unclear ? json(t.pass) : json(nullptr)},
         {"verdict", Verdict(t)},
         {"iqr", t.spread ? json({t.spread->first, t.spread->second}) : json(nullptr)},
         {"note", t.note}});
  }
  return j.dump(2) + "\n";
}

namespace {

constexpr const char* kLayerColour = "#1c7ed6";   // rungs 1-6
constexpr const char* kCorralColour = "#d9480f";  // every corral row
constexpr const char* kPeerColour = "#868e96";    // other sandboxes

const char* EntryColour(const LatencyEntry& e) {
  if (e.group == "peer") return kPeerColour;
  return IsLadderRung(e) ? kLayerColour : kCorralColour;
}

std::string Num(int v) { return std::to_string(v); }

std::string Text(int x, int y, const std::string& text, const std::string& attrs = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"" + (attrs.empty() ? "" : " " + attrs) +
         ">" + XmlEscape(text) + "</text>\n";
}

std::string Line(int x1, int y1, int x2, int y2, const char* colour) {
  return "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
         Num(y2) + "\" stroke=\"" + colour + "\" stroke-width=\"1.5\"/>\n";
}

// Legend swatches are not bars: they start with class= so `<rect x=` stays one per bar.
std::string Swatch(int x, int y, const char* colour) {
  return "<rect class=\"swatch\" x=\"" + Num(x) + "\" y=\"" + Num(y) +
         "\" width=\"14\" height=\"12\" fill=\"" + colour + "\"/>\n";
}

std::string ThroughputCell(const BenchResults& r, const std::string& name) {
  for (const auto& t : r.throughput) {
    if (t.name != name) continue;
    return t.status == EntryStatus::kOk ? Fmt("%.1f/s", t.launches_per_s)
                                        : EntryStatusName(t.status);
  }
  return "";
}

constexpr int kSvgWidth = 980, kSvgLabel = 230, kBarH = 16, kRowGap = 4;
constexpr int kThroughputX = kSvgWidth - 12;              // right edge of the launches/s column
constexpr int kPlot = kSvgWidth - kSvgLabel - 150 - 180;  // clear of the figures column

// One workload: a bar per launcher (median), its p10-p90 whisker, the figures, and on
// the throughput workload the launches/s column.
void SvgPanel(const BenchResults& r, const WorkloadResult& w, bool with_throughput, int& y,
              std::string& svg) {
  double max_ms = 0;
  for (const auto& e : w.entries)
    if (e.status == EntryStatus::kOk) max_ms = std::max({max_ms, e.summary.median, e.summary.p90});
  svg += Text(10, y + 16, w.workload + " — latency, ms", "font-weight=\"bold\"");
  svg += Text(kThroughputX - 150 - 8, y + 16, "median (p10–p90)",
              "text-anchor=\"end\" fill=\"#495057\"");
  if (with_throughput) {
    svg += Text(kThroughputX, y + 16, "launches/s, " + Num(r.workers) + " workers",
                "text-anchor=\"end\" fill=\"#495057\"");
  }
  y += 28;
  for (const auto& e : w.entries) {
    svg += Text(kSvgLabel - 6, y + 12, e.name, "text-anchor=\"end\"");
    if (e.status == EntryStatus::kOk && max_ms > 0) {
      auto at = [&](double ms) { return kSvgLabel + static_cast<int>(ms / max_ms * kPlot); };
      const double p10 = Percentile(e.samples_ms, 10).value_or(e.summary.median);
      const int len = std::max(1, at(e.summary.median) - kSvgLabel);
      svg += "<rect x=\"" + Num(kSvgLabel) + "\" y=\"" + Num(y) + "\" width=\"" + Num(len) +
             "\" height=\"" + Num(kBarH) + "\" fill=\"" + EntryColour(e) + "\"/>\n";
      const int mid = y + kBarH / 2;
      svg += Line(at(p10), mid, at(e.summary.p90), mid, "#212529");
      svg += Line(at(p10), mid - 4, at(p10), mid + 4, "#212529");
      svg += Line(at(e.summary.p90), mid - 4, at(e.summary.p90), mid + 4, "#212529");
      svg += Text(kThroughputX - 150 - 8, y + 12,
                  Fmt("%.2f", e.summary.median) + " (" + Fmt("%.2f", p10) + "–" +
                      Fmt("%.2f", e.summary.p90) + ")",
                  "text-anchor=\"end\"");
    } else {
      // The reason in full under the panels (NotMeasuredLines); here as much as fits.
      const std::string text = std::string(EntryStatusName(e.status)) + ": " + e.reason;
      svg += Text(kSvgLabel, y + 12, text.size() > 80 ? text.substr(0, 77) + "... (below)" : text,
                  "fill=\"#999\"");
    }
    if (with_throughput) {
      std::string cell = ThroughputCell(r, e.name);
      if (!cell.empty()) svg += Text(kThroughputX, y + 12, cell, "text-anchor=\"end\"");
    }
    y += kBarH + kRowGap;
  }
  y += 14;
}

// "name: skipped: reason" for every launcher not measured (once, however many workloads),
// wrapped at `width` characters: the whole reason, which a row has no room for.
std::vector<std::string> NotMeasuredLines(const BenchResults& r, size_t width) {
  std::vector<std::string> lines;
  std::vector<std::string> seen;
  for (const auto& w : r.latency) {
    for (const auto& e : w.entries) {
      if (e.status == EntryStatus::kOk ||
          std::find(seen.begin(), seen.end(), e.name) != seen.end()) {
        continue;
      }
      seen.push_back(e.name);
      std::string text = e.name + ": " + EntryStatusName(e.status) + ": " + e.reason;
      bool first = true;
      while (!text.empty()) {
        size_t cut = text.size() <= width ? text.size() : text.rfind(' ', width);
        if (cut == std::string::npos || cut == 0) cut = std::min(width, text.size());
        lines.push_back((first ? "" : "    ") + text.substr(0, cut));
        text.erase(0, cut);
        while (!text.empty() && text.front() == ' ') text.erase(0, 1);
        first = false;
      }
    }
  }
  return lines;
}

constexpr int kNoteLine = 15;  // line height of the notes under the panels

}  // namespace

std::string ToSvg(const BenchResults& r) {
  const std::vector<std::string> notes = NotMeasuredLines(r, 140);
  int height = 120;
  for (const auto& w : r.latency)
    height += 28 + static_cast<int>(w.entries.size()) * (kBarH + kRowGap) + 14;
  if (!notes.empty()) height += 24 + static_cast<int>(notes.size()) * kNoteLine;
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(kSvgWidth) + "\" height=\"" +
         Num(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += Text(10, 24, "corral bench: launch latency per launcher",
              "font-size=\"17\" font-weight=\"bold\"");
  svg += Text(
      10, 42,
      r.machine.kernel + ", " + Num(r.machine.cores) + " cores, cgroups " + r.machine.cgroup_mode,
      "font-size=\"11\" fill=\"#495057\"");
  svg += Text(10, 57,
              r.started_at + ", " + Num(r.rounds) + " interleaved rounds" +
                  (r.pause_ms > 0 ? ", " + Num(r.pause_ms) + " ms idle before each launch" : ""),
              "font-size=\"11\" fill=\"#495057\"");
  // Legend.
  int x = 10;
  const int ly = 70;
  for (auto [colour, label] :
       {std::pair{kLayerColour, "isolation layers, rungs 1-6 (cumulative)"},
        std::pair{kCorralColour, "corral"}, std::pair{kPeerColour, "peer sandboxes"}}) {
    svg += Swatch(x, ly, colour);
    svg += Text(x + 19, ly + 11, label);
    x += 19 + static_cast<int>(std::string(label).size()) * 7 + 18;
  }
  svg += Line(x, ly + 6, x + 30, ly + 6, "#212529");
  svg += Line(x, ly + 2, x, ly + 10, "#212529");
  svg += Line(x + 30, ly + 2, x + 30, ly + 10, "#212529");
  svg += Text(x + 36, ly + 11, "p10–p90 of the samples; bar: median");
  int y = 100;
  for (size_t i = 0; i < r.latency.size(); ++i) {
    SvgPanel(r, r.latency[i], /*with_throughput=*/i == 0 && !r.throughput.empty(), y, svg);
  }
  if (!notes.empty()) {
    svg += Text(10, y + 12, "not measured", "font-weight=\"bold\"");
    y += 24;
    for (const std::string& line : notes) {
      svg += Text(10, y + 10, line, "font-size=\"11\" fill=\"#495057\"");
      y += kNoteLine;
    }
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
