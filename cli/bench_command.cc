// `corral bench`: what each isolation layer costs here, and how corral compares with the
// peer sandboxes on PATH. Parses flags into bench::BenchOptions; the work is in bench/.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "base/files.h"
#include "bench/launcher.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench/scale.h"
#include "cli/commands.h"

namespace corral::cli {

namespace {

// `corral bench --scale [STEPS]`: the scale run alone (bench/scale.h).
int RunScale(const std::string& steps_text, int workers, const std::string& corral_exe,
             const std::string& out_dir) {
  bench::ScaleOptions options;
  options.corral_exe = corral_exe;
  if (!steps_text.empty()) {
    auto steps = bench::ParseScaleSteps(steps_text);
    if (!steps) {
      std::cerr << "corral bench: " << steps.error().message() << "\n";
      return 125;
    }
    options.steps = *steps;
  }
  if (workers > 0) options.workers = workers;
  bench::Progress progress;
  bench::ScaleFigures figures = bench::MeasureScale(options, progress);
  std::cout << bench::FormatScaleTable(figures) << std::flush;
  if (!out_dir.empty()) {
    const std::string path = out_dir + "/scale.json";
    Status s = ::mkdir(out_dir.c_str(), 0755) == 0 || errno == EEXIST
                   ? WriteFile(path, bench::ScaleToJson(figures).dump(2) + "\n")
                   : Status(Error::FromErrno(errno, out_dir));
    if (!s) {
      std::cerr << "corral bench: " << s.error().message() << "\n";
      return 125;
    }
    std::cerr << "wrote " << path << "\n";
  }
  if (figures.left_behind > 0) return 1;
  return figures.status == bench::EntryStatus::kOk ? 0 : 1;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "bench", "measure what isolation costs, layer by layer, next to peer sandboxes");
  struct Flags {
    bench::BenchOptions options;
    std::string out;
    std::string scale;         // "--scale [STEPS]": only the scale run
    std::string scale_corral;  // the corral the scale run drives (default: this one)
  };
  auto flags = std::make_shared<Flags>();
  cmd->add_flag("--quick", flags->options.quick, "short run (under a minute)");
  cmd->add_option("--rounds", flags->options.rounds,
                  "interleaved latency rounds per workload (default 60, quick 8)");
  cmd->add_option("--workers", flags->options.workers,
                  "concurrent launchers for throughput (default: online CPUs)");
  cmd->add_option("--sandboxes", flags->options.sandboxes,
                  "persistent sandboxes to bring up (default 100, quick 10; 0 = skip)");
  cmd->add_option("--serve-sandboxes", flags->options.serve_sandboxes,
                  "sandboxes to create through a `corral serve` on loopback for the daemon's "
                  "figures (default 50, quick 5; 0 = skip)");
  cmd->add_option("--slice", flags->options.slice_seconds,
                  "seconds per throughput slice (default 1.5, quick 0.5)");
  cmd->add_option("--throughput-rounds", flags->options.throughput_rounds,
                  "interleaved throughput slices per launcher (default 3, quick 1)");
  cmd->add_option("--pause-ms", flags->options.pause_ms,
                  "idle ms before each timed latency launch, as between an agent's tool calls "
                  "(0-10000; default 0: back to back)")
      ->check(CLI::Range(0, 10000).description(""));  // else help shows "INT:INT in [...]"
  // A callback, not a "!--no-peers" flag bound to the bool: CLI11 prints that one's
  // negated default into --help as "--no-peers{false}".
  cmd->add_flag_callback(
      "--no-peers", [flags] { flags->options.peers = false; }, "only the layer ladder and corral");
  cmd->add_option("--out", flags->out,
                  "directory for bench.json and bench.svg (with --scale: scale.json)");
  auto* scale = cmd->add_option("--scale", flags->scale,
                                "only bring persistent sandboxes up in steps and down again, "
                                "measuring host memory, slab and times per step (STEPS default "
                                "1000,4000,10000; --workers default 16)")
                    ->expected(0, 1)
                    ->type_name("STEPS");
  cmd->add_option("--scale-corral", flags->scale_corral,
                  "with --scale: the corral binary whose create and rm are measured (default: "
                  "this one), to compare two builds on one host")
      ->check(CLI::ExistingFile);
  cmd->callback([cmd, scale, flags, exit_code] {
    bench::BenchOptions o = flags->options;
    if (geteuid() != 0) {
      std::cerr << "corral bench: needs root (namespaces, cgroups, mounts)\n";
      *exit_code = 125;
      return;
    }
    o.corral_exe = bench::CorralExe();
    if (scale->count() > 0) {
      *exit_code =
          RunScale(flags->scale, cmd->count("--workers") > 0 ? o.workers : 0,
                   flags->scale_corral.empty() ? o.corral_exe : flags->scale_corral, flags->out);
      return;
    }
    // The report records the command line exactly as given.
    o.command = "corral";
    if (auto cmdline = ReadFile("/proc/self/cmdline")) {
      std::string arg;
      bool first = true;
      for (char c : *cmdline) {
        if (c != '\0') {
          arg += c;
          continue;
        }
        if (!first) o.command += " " + arg;
        first = false;
        arg.clear();
      }
    }
    auto results = bench::RunBench(o);
    if (!results) {
      std::cerr << "corral bench: " << results.error().message() << "\n";
      *exit_code = 125;
      return;
    }
    std::cout << bench::FormatTable(*results) << std::flush;
    if (!flags->out.empty()) {
      Status s = bench::WriteReports(*results, flags->out);
      if (!s) {
        std::cerr << "corral bench: " << s.error().message() << "\n";
        *exit_code = 125;
        return;
      }
      std::cerr << "wrote " << flags->out << "/bench.json and " << flags->out << "/bench.svg\n";
    }
    *exit_code = 0;
  });
}

}  // namespace corral::cli
