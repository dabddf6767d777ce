#include "runtime/run/outcome_report.h"

#include <cstdio>

#include "runtime/spec/sizes.h"

namespace corral::runtime {

std::string OutcomeReport(const RunOutcome& outcome, const LimitsSpec& limits, bool with_reason) {
  std::string out;
  for (const auto& w : outcome.warnings) out += "corral: warning: " + w + "\n";
  if (!with_reason) return out;
  if (outcome.setup_error) {
    out += "corral: " + outcome.setup_error->ToString() + "\n";
  } else if (outcome.status == RunStatus::kTimedOut) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", limits.timeout_seconds);
    out += std::string("corral: command timed out after ") + seconds + " s\n";
  } else if (outcome.status == RunStatus::kOomKilled) {
    out += "corral: command killed: out of memory (limit " + FormatSize(limits.memory_bytes) +
           ")\n";
  }
  return out;
}

}  // namespace corral::runtime
