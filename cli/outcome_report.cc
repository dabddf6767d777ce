#include "cli/outcome_report.h"

#include <cstdio>

#include "runtime/sizes.h"

namespace corral::cli {

int ReportOutcome(const runtime::RunOutcome& outcome, const runtime::LimitsSpec& limits,
                  bool json) {
  for (const auto& w : outcome.warnings) std::fprintf(stderr, "corral: warning: %s\n", w.c_str());
  if (json) {
    // stdio, not iostreams: the front program (cli/front) links this file and starts
    // faster without them.
    std::printf("%s\n", runtime::OutcomeToJson(outcome).c_str());
    std::fflush(stdout);
  } else if (outcome.setup_error) {
    std::fprintf(stderr, "corral: %s\n", outcome.setup_error->ToString().c_str());
  } else if (outcome.status == runtime::RunStatus::kTimedOut) {
    std::fprintf(stderr, "corral: command timed out after %g s\n", limits.timeout_seconds);
  } else if (outcome.status == runtime::RunStatus::kOomKilled) {
    std::fprintf(stderr, "corral: command killed: out of memory (limit %s)\n",
                 runtime::FormatSize(limits.memory_bytes).c_str());
  }
  return runtime::CliExitCode(outcome);
}

}  // namespace corral::cli
