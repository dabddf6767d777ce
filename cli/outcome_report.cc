#include "cli/outcome_report.h"

#include <cstdio>

#include "runtime/run/outcome_report.h"

namespace corral::cli {

int ReportOutcome(const runtime::RunOutcome& outcome, const runtime::LimitsSpec& limits,
                  bool json) {
  std::fputs(runtime::OutcomeReport(outcome, limits, /*with_reason=*/!json).c_str(), stderr);
  if (json) {
    std::printf("%s\n", runtime::OutcomeToJson(outcome).c_str());
    std::fflush(stdout);
  }
  return runtime::CliExitCode(outcome);
}

}  // namespace corral::cli
