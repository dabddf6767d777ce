#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/layers.h"
#include "bench/report.h"
#include "bench/results.h"

namespace corral::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

LatencyEntry Ok(const std::string& name, const std::string& group, std::vector<double> ms) {
  LatencyEntry e;
  e.name = name;
  e.group = group;
  e.description = "test";
  e.samples_ms = std::move(ms);
  e.summary = Summarize(e.samples_ms);
  return e;
}

BenchResults MakeResults() {
  BenchResults r;
  r.command = "corral bench --quick";
  r.started_at = "2026-12-01T06:00:00Z";
  r.machine.kernel = "Linux 6.18.0 x86_64";
  r.machine.cpu_model = "Test CPU";
  r.machine.cores = 2;
  r.machine.memory_bytes = 4LL << 30;
  r.machine.cgroup_mode = "hybrid";
  r.rounds = 3;
  r.workers = 2;
  WorkloadResult w;
  w.workload = "/bin/true";
  w.entries.push_back(Ok(kBareName, "layer", {1, 1, 1}));
  w.entries.push_back(Ok(kCorralRunName, "layer", {4, 4, 4}));
  w.entries.push_back(Ok(kCorralExecName, "layer", {1.5, 1.5, 1.5}));
  w.entries.push_back(Ok(kBwrapName, "peer", {10, 10, 10}));
  LatencyEntry skipped;
  skipped.name = "nsjail";
  skipped.group = "peer";
  skipped.status = EntryStatus::kSkipped;
  skipped.reason = "not installed";
  w.entries.push_back(skipped);
  w.entries.push_back(Ok(kCorralPoolRunName, "layer", {6, 6, 6}));
  w.entries.push_back(Ok(kCorralPoolExecName, "layer", {3, 3, 3}));
  w.entries.push_back(Ok(kCorralRootlessRunName, "layer", {12, 12, 12}));
  w.entries.push_back(Ok(kBwrapRootlessName, "peer", {8, 8, 8}));
  w.entries.push_back(Ok(kCorralRootlessPoolRunName, "layer", {2, 2, 2}));
  r.latency.push_back(w);
  ThroughputEntry tc{kCorralRunName, EntryStatus::kOk, "", 2, 400, {400, 400}};
  ThroughputEntry tb{kBwrapName, EntryStatus::kOk, "", 2, 100, {100, 100}};
  r.throughput = {tc, tb};
  r.sandboxes.status = EntryStatus::kOk;
  r.sandboxes.requested = r.sandboxes.created = 100;
  r.sandboxes.bring_up_s = 2.0;
  r.sandboxes.mem_available_per_sandbox_bytes = 2.0 * 1024 * 1024;
  r.sandboxes.pause_ms = {3, 4, 30};    // median 4: within 10 ms
  r.sandboxes.resume_ms = {12, 11, 2};  // median 11: over it
  r.sandboxes.diff_ms = {40, 30, 120};  // median 40: within 100 ms
  r.sandboxes.diff_upper_bytes = 100 << 20;
  r.sandboxes.fork_ms = {30, 60, 20};              // median 30: within 50 ms
  r.sandboxes.fork_extra_bytes = 2 * 1024 * 1024;  // over 1 MiB
  EvaluateTargets(&r);
  return r;
}

TEST(BenchTargets, ComputesEachTargetFromTheFigures) {
  BenchResults r = MakeResults();
  // 9 launch targets, pause, resume, diff, fork and its disk, the daemon's 5
  ASSERT_EQ(r.targets.size(), 19u);
  EXPECT_TRUE(r.targets[0].measured);
  EXPECT_DOUBLE_EQ(r.targets[0].value, 0.4);  // 4 / 10
  EXPECT_TRUE(r.targets[0].pass);
  EXPECT_DOUBLE_EQ(r.targets[1].value, 0.6);  // pooled run / bwrap
  EXPECT_FALSE(r.targets[1].pass);
  EXPECT_DOUBLE_EQ(r.targets[2].value, 1.5);  // exec / bare
  EXPECT_TRUE(r.targets[2].pass);
  EXPECT_DOUBLE_EQ(r.targets[3].value, 3.0);  // pooled exec / bare
  EXPECT_FALSE(r.targets[3].pass);
  EXPECT_DOUBLE_EQ(r.targets[4].value, 4.0);  // 400/s vs 100/s
  EXPECT_TRUE(r.targets[4].pass);
  EXPECT_DOUBLE_EQ(r.targets[5].value, 2.0);  // MiB
  EXPECT_FALSE(r.targets[5].pass);
  EXPECT_DOUBLE_EQ(r.targets[6].value, 20.0);  // 2 s for 100 -> 20 s for 1000
  EXPECT_FALSE(r.targets[6].pass);
  EXPECT_THAT(r.targets[6].note, HasSubstr("extrapolated"));
  EXPECT_DOUBLE_EQ(r.targets[7].value, 1.5);  // rootless corral run / unprivileged bwrap
  EXPECT_FALSE(r.targets[7].pass);
  EXPECT_DOUBLE_EQ(r.targets[8].value, 0.25);  // rootless pooled run / unprivileged bwrap
  EXPECT_TRUE(r.targets[8].pass);
  EXPECT_THAT(r.targets[9].name, HasSubstr("pause"));
  EXPECT_DOUBLE_EQ(r.targets[9].value, 4.0);  // the median, ms
  EXPECT_TRUE(r.targets[9].pass);
  EXPECT_THAT(r.targets[10].name, HasSubstr("resume"));
  EXPECT_DOUBLE_EQ(r.targets[10].value, 11.0);
  EXPECT_FALSE(r.targets[10].pass);
  EXPECT_THAT(r.targets[11].name, HasSubstr("corral diff"));
  EXPECT_DOUBLE_EQ(r.targets[11].value, 40.0);
  EXPECT_TRUE(r.targets[11].pass);
  EXPECT_THAT(r.targets[12].name, HasSubstr("corral fork"));
  EXPECT_DOUBLE_EQ(r.targets[12].value, 30.0);
  EXPECT_TRUE(r.targets[12].pass);
  EXPECT_THAT(r.targets[13].name, HasSubstr("disk a fork adds"));
  EXPECT_DOUBLE_EQ(r.targets[13].value, 2.0);  // MiB
  EXPECT_FALSE(r.targets[13].pass);
  EXPECT_THAT(FormatTable(r), HasSubstr("fork of that sandbox: median 30.00 ms (3 rounds), at "
                                        "most 2048 KiB more disk per fork"));
  EXPECT_THAT(FormatTable(r), HasSubstr("pause / resume of one holding 20 processes: median "
                                        "4.00 ms / 11.00 ms (3 rounds)"));
  EXPECT_THAT(FormatTable(r), HasSubstr("diff of a workspace overlay with 100 MiB in 1000 new "
                                        "files: median 40.00 ms (3 rounds), upper layer "
                                        "100.00 MiB"));
}

TEST(BenchTargets, MemAvailableRisingIsNoiseNotAPass) {
  BenchResults r = MakeResults();
  r.sandboxes.mem_available_per_sandbox_bytes = -0.5 * 1024 * 1024;
  EvaluateTargets(&r);
  EXPECT_FALSE(r.targets[5].measured);
  EXPECT_FALSE(r.targets[5].pass);
  EXPECT_THAT(r.targets[5].note, HasSubstr("MemAvailable rose by 0.50 MiB per sandbox"));
  EXPECT_THAT(FormatTable(r), HasSubstr("not measured: MemAvailable rose"));
}

TEST(BenchTargets, MissingPeerMeansNotMeasuredRatherThanPass) {
  BenchResults r = MakeResults();
  r.latency[0].entries[3].status = EntryStatus::kSkipped;
  r.throughput.pop_back();
  EvaluateTargets(&r);
  EXPECT_FALSE(r.targets[0].measured);
  EXPECT_FALSE(r.targets[0].pass);
  EXPECT_FALSE(r.targets[1].measured);
  EXPECT_FALSE(r.targets[4].measured);
}

TEST(BenchReportTable, ShowsMachineFiguresSkipsAndPassMiss) {
  const std::string t = FormatTable(MakeResults());
  EXPECT_THAT(t, HasSubstr("Linux 6.18.0 x86_64, 2 cores"));
  EXPECT_THAT(t, HasSubstr("cgroups hybrid"));
  EXPECT_THAT(t, HasSubstr("nsjail"));
  EXPECT_THAT(t, HasSubstr("skipped: not installed"));
  EXPECT_THAT(t, HasSubstr("4.00"));  // corral run median
  EXPECT_THAT(t, HasSubstr("0.40"));  // x bwrap
  EXPECT_THAT(t, HasSubstr("PASS"));
  EXPECT_THAT(t, HasSubstr("MISS"));
  EXPECT_THAT(t, HasSubstr("400.0/s"));
}

TEST(BenchReportJson, IsWellFormedAndCarriesSamplesRatiosAndTargets) {
  auto j = nlohmann::json::parse(ToJson(MakeResults()));
  EXPECT_EQ(j["machine"]["cores"], 2);
  EXPECT_EQ(j["command"], "corral bench --quick");
  const auto& entries = j["latency"][0]["entries"];
  ASSERT_EQ(entries.size(), 10u);
  EXPECT_EQ(entries[1]["name"], kCorralRunName);
  EXPECT_DOUBLE_EQ(entries[1]["summary_ms"]["median"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(entries[1]["ratio_vs_bare"]["median"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(entries[1]["ratio_vs_bwrap"]["median"].get<double>(), 0.4);
  EXPECT_EQ(entries[1]["samples_ms"].size(), 3u);
  EXPECT_EQ(entries[4]["status"], "skipped");
  EXPECT_EQ(entries[4]["reason"], "not installed");
  EXPECT_FALSE(entries[4].contains("summary_ms"));
  EXPECT_EQ(j["targets"].size(), 19u);
  EXPECT_EQ(j["sandboxes"]["fork_ms"].size(), 3u);
  EXPECT_EQ(j["sandboxes"]["fork_extra_bytes"], 2 * 1024 * 1024);
  EXPECT_EQ(j["sandboxes"]["pause_ms"].size(), 3u);
  EXPECT_EQ(j["targets"][0]["pass"], true);
  EXPECT_EQ(j["throughput"][0]["launches_per_s"], 400);
  EXPECT_EQ(j["sandboxes"]["created"], 100);
}

TEST(BenchReport, RecordsTheIdlePauseBeforeLaunches) {
  BenchResults r = MakeResults();
  EXPECT_THAT(FormatTable(r), Not(HasSubstr("idle before each launch")));
  r.pause_ms = 100;
  EXPECT_THAT(FormatTable(r),
              HasSubstr("3 interleaved per workload, 100 ms idle before each launch"));
  EXPECT_EQ(nlohmann::json::parse(ToJson(r))["settings"]["pause_ms"], 100);
}

TEST(BenchReportSvg, IsOneSvgDocumentWithABarPerMeasuredLauncherAndEscapedText) {
  BenchResults r = MakeResults();
  r.latency[0].workload = "sh -c 'echo <hi> & bye'";
  const std::string svg = ToSvg(r);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  size_t bars = 0;
  for (size_t p = svg.find("<rect x="); p != std::string::npos; p = svg.find("<rect x=", p + 1))
    ++bars;
  EXPECT_EQ(bars, 9u);  // nine measured launchers; the skipped one gets text only
  EXPECT_THAT(svg, HasSubstr("sh -c &apos;echo &lt;hi&gt; &amp; bye&apos;"));
  EXPECT_THAT(svg, Not(HasSubstr("<hi>")));
  EXPECT_THAT(svg, HasSubstr("skipped: not installed"));
}

// Count of non-overlapping occurrences of `needle`.
size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// The line of `text` that contains `needle` (empty if none).
std::string LineWith(const std::string& text, const std::string& needle) {
  size_t p = text.find(needle);
  if (p == std::string::npos) return "";
  size_t begin = text.rfind('\n', p);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, text.find('\n', p) - begin);
}

TEST(BenchTargets, AnExtrapolatedFigureIsAnEstimateNeverJudged) {
  BenchResults r = MakeResults();  // 100 sandboxes: the 1000-sandbox figure is extrapolated
  const TargetResult& up = r.targets[6];
  EXPECT_TRUE(up.estimate);
  EXPECT_FALSE(up.pass);
  EXPECT_THAT(up.note, HasSubstr("estimate"));
  std::string line = LineWith(FormatTable(r), "1000 sandboxes up");
  EXPECT_THAT(line, HasSubstr("estimate")) << line;
  EXPECT_THAT(line, Not(HasSubstr("MISS"))) << line;
  EXPECT_THAT(line, Not(HasSubstr("PASS"))) << line;
  auto j = nlohmann::json::parse(ToJson(r));
  EXPECT_EQ(j["targets"][6]["estimate"], true);
  EXPECT_TRUE(j["targets"][6]["pass"].is_null());
  // Quick enough for a small run to pass would still only be an estimate.
  r.sandboxes.bring_up_s = 0.1;
  EvaluateTargets(&r);
  EXPECT_TRUE(r.targets[6].estimate);
  EXPECT_FALSE(r.targets[6].pass);
  EXPECT_THAT(LineWith(FormatTable(r), "1000 sandboxes up"), Not(HasSubstr("PASS")));
  // Measured at full size: judged.
  r.sandboxes.requested = r.sandboxes.created = 1000;
  r.sandboxes.bring_up_s = 8;
  EvaluateTargets(&r);
  EXPECT_FALSE(r.targets[6].estimate);
  EXPECT_TRUE(r.targets[6].pass);
  EXPECT_THAT(LineWith(FormatTable(r), "1000 sandboxes up"), HasSubstr("PASS"));
}

TEST(BenchReportTable, NamesNoInternalIssuesAndSaysWhatEachRowIs) {
  BenchResults r = MakeResults();
  r.latency[0].entries[0].description = "rung 1: fork(), execve(), waitpid()";
  const std::string t = FormatTable(r);
  EXPECT_THAT(t, Not(HasSubstr("issue")));
  EXPECT_THAT(t, HasSubstr("\ntargets:\n"));
  EXPECT_THAT(t, HasSubstr("rungs 1-6 are cumulative"));
  EXPECT_THAT(LineWith(t, "rung 1: fork()"), HasSubstr(kBareName));
  EXPECT_THAT(LineWith(t, "  bwrap  "), HasSubstr("peer: test"));
  EXPECT_THAT(LineWith(t, std::string("  ") + kCorralRunName + "  "), HasSubstr("corral: test"));
}

// Every rung says what it adds and to which rung: they are cumulative (bench/layers.cc).
TEST(BenchLadder, EachRungNamesItsBaseAndWhatItAdds) {
  auto ladder = MakeLadder("/nonexistent/corral");
  ASSERT_GE(ladder.size(), 6u);
  EXPECT_EQ(ladder[0]->name(), kBareName);
  EXPECT_EQ(ladder[0]->description().rfind("rung 1: ", 0), 0u);
  for (int k = 2; k <= 6; ++k) {
    const std::string prefix =
        "rung " + std::to_string(k) + " = rung " + std::to_string(k - 1) + " + ";
    EXPECT_EQ(ladder[k - 1]->description().rfind(prefix, 0), 0u) << ladder[k - 1]->description();
  }
  EXPECT_EQ(ladder[5]->name(), "+seccomp");
  EXPECT_THAT(ladder[5]->description(), HasSubstr("seccomp filter"));
  EXPECT_THAT(ladder[4]->description(), HasSubstr("cgroup"));
}

TEST(BenchReportSvg, HasALegendAShortTitleSpreadThroughputAndOneColourPerKind) {
  BenchResults r = MakeResults();
  r.latency[0].entries.push_back(Ok("JailPool in-process (warm)", "layer", {3, 3, 3}));
  r.latency[0].entries.push_back(Ok("+seccomp", "layer", {2, 2, 2}));
  const std::string svg = ToSvg(r);
  // The title is short; the machine goes on a line of its own.
  std::string title = LineWith(svg, "font-size=\"17\"");
  EXPECT_THAT(title, HasSubstr(">corral bench: launch latency per launcher</text>"));
  EXPECT_THAT(svg, HasSubstr(">Linux 6.18.0 x86_64, 2 cores, cgroups hybrid</text>"));
  // Legend: a swatch per kind, and what the whisker is.
  EXPECT_EQ(Count(svg, "class=\"swatch\""), 3u);
  EXPECT_THAT(svg, HasSubstr(">corral</text>"));
  EXPECT_THAT(svg, HasSubstr(">peer sandboxes</text>"));
  EXPECT_THAT(svg, HasSubstr("p10–p90"));
  // Colours: every corral row orange, the rungs blue, the peers grey.
  auto bar_colour = [&](const std::string& name) {
    size_t label = svg.find(">" + name + "</text>");
    size_t fill = svg.find("fill=\"", svg.find("<rect x=", label));
    return svg.substr(fill + 6, 7);
  };
  EXPECT_EQ(bar_colour("JailPool in-process (warm)"), bar_colour(kCorralRunName));
  EXPECT_EQ(bar_colour(kCorralExecName), bar_colour(kCorralRunName));
  EXPECT_EQ(bar_colour("+seccomp"), bar_colour(kBareName));
  EXPECT_NE(bar_colour(kBareName), bar_colour(kCorralRunName));
  EXPECT_NE(bar_colour(kBwrapName), bar_colour(kCorralRunName));
  EXPECT_NE(bar_colour(kBwrapName), bar_colour(kBareName));
  // Spread and throughput beside the medians.
  EXPECT_THAT(svg, HasSubstr(">4.00 (4.00–4.00)</text>"));
  EXPECT_GE(Count(svg, "<line "), 3u * 8);  // a whisker (3 lines) per measured launcher
  EXPECT_THAT(svg, HasSubstr(">400.0/s</text>"));
  EXPECT_THAT(svg, HasSubstr(">100.0/s</text>"));
  EXPECT_THAT(svg, HasSubstr("launches/s, 2 workers"));
}

// Two runs a few minutes apart flipped verdicts: a median just under the bar with half its
// rounds over it is no PASS.
TEST(BenchTargets, AVerdictMustClearTheSpreadOfItsRounds) {
  BenchResults r = MakeResults();
  r.latency[0].entries[1].samples_ms = {3, 4, 5, 6, 7};  // corral run: 0.3 ... 0.7 x bwrap
  r.latency[0].entries[3].samples_ms = {10, 10, 10, 10, 10};
  for (auto& e : r.latency[0].entries) {
    if (e.status == EntryStatus::kOk) e.samples_ms.resize(5, e.samples_ms.back());
  }
  EvaluateTargets(&r);
  const TargetResult& run = r.targets[0];
  EXPECT_DOUBLE_EQ(run.value, 0.5);  // the median meets "<= 0.50x" ...
  ASSERT_TRUE(run.spread.has_value());
  EXPECT_DOUBLE_EQ(run.spread->first, 0.4);
  EXPECT_DOUBLE_EQ(run.spread->second, 0.6);
  EXPECT_TRUE(run.unclear);  // ... but its IQR straddles it
  EXPECT_FALSE(run.pass);
  EXPECT_THAT(LineWith(FormatTable(r), "corral run / bwrap"), HasSubstr("UNCLEAR"));
  auto j = nlohmann::json::parse(ToJson(r));
  EXPECT_EQ(j["targets"][0]["verdict"], "unclear");
  EXPECT_TRUE(j["targets"][0]["pass"].is_null());
  EXPECT_EQ(j["targets"][0]["iqr"], nlohmann::json::parse("[0.4, 0.6]"));
  EXPECT_EQ(j["targets"][2]["verdict"], "pass");  // exec / bare: 1.5 every round
}

TEST(BenchTargets, IdleMemoryIsNeverBelowTheSandboxesOwnCgroupCharge) {
  BenchResults r = MakeResults();
  r.sandboxes.mem_available_per_sandbox_bytes = 0.04 * 1024 * 1024;
  r.sandboxes.cgroup_memory_per_sandbox_bytes = 0.25 * 1024 * 1024;
  EvaluateTargets(&r);
  EXPECT_DOUBLE_EQ(r.targets[5].value, 0.25);
  EXPECT_THAT(r.targets[5].note, HasSubstr("cgroup charge"));
  EXPECT_THAT(r.targets[5].note, HasSubstr("0.04 MiB"));
}

TEST(BenchReport, RecordsTheHostsLoadAndSteal) {
  BenchResults r = MakeResults();
  EXPECT_THAT(FormatTable(r), HasSubstr("host load: load average unknown"));
  r.machine.load_start = std::array<double, 3>{0.52, 0.4, 0.3};
  r.machine.load_end = std::array<double, 3>{1.5, 0.8, 0.4};
  r.machine.steal_percent = 2.5;
  EXPECT_THAT(FormatTable(r), HasSubstr("host load: load average 0.52 0.40 0.30 at the start, "
                                        "1.50 0.80 0.40 at the end; CPU steal 2.5% over the run"));
  auto j = nlohmann::json::parse(ToJson(r));
  EXPECT_EQ(j["host_load"]["loadavg_start"][0], 0.52);
  EXPECT_EQ(j["host_load"]["steal_percent"], 2.5);
  EXPECT_TRUE(ReadLoadAverage().has_value());  // this host's /proc
  EXPECT_TRUE(ReadStealJiffies().has_value());
}

TEST(BenchReportTable, ColumnsStayAlignedForLongNames) {
  BenchResults r = MakeResults();
  r.latency[0].entries.push_back(
      Ok("corral run --mode container (crun), pooled", "layer", {2, 2, 2}));
  const std::string t = FormatTable(r);
  // The latency table's rows (the launchers section names them too).
  auto row = [&](const std::string& name, const std::string& figure) {
    std::istringstream lines(t);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(name) != std::string::npos && line.find(figure) != std::string::npos) {
        return line;
      }
    }
    return std::string();
  };
  const std::string header = LineWith(t, "  launcher");
  const std::string long_row = row("(crun), pooled", "2.00");
  const std::string short_row = row(kBareName, "1.00");
  ASSERT_FALSE(long_row.empty()) << t;
  const size_t median_end = header.find("median") + 6;
  EXPECT_EQ(long_row.find("2.00") + 4, median_end) << header << "\n" << long_row;
  EXPECT_EQ(short_row.find("1.00") + 4, median_end) << header << "\n" << short_row;
}

TEST(BenchReportSvg, SkipReasonsAreShownWhole) {
  BenchResults r = MakeResults();
  const std::string reason =
      "nsjail is not installed here (apt-get install nsjail); it also needs a kernel with "
      "user namespaces for unprivileged users, which this host turns off by sysctl; the end";
  r.latency[0].entries[4].reason = reason;
  const std::string svg = ToSvg(r);
  EXPECT_THAT(svg, HasSubstr(">not measured</text>"));
  EXPECT_THAT(svg, HasSubstr("which this host turns off by sysctl; the end</text>"));
}

}  // namespace
}  // namespace corral::bench
