#include "cli/outcome_report.h"

#include <cstdio>
#include <iostream>

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

int ReportRefusal(const Error& e, bool json) {
  std::fprintf(stderr, "corral: %s\n", e.message().c_str());
  if (json) std::cout << runtime::ErrorToJson(e) << std::endl;
  return 125;
}

}  // namespace corral::cli
