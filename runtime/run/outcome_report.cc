#include "runtime/run/outcome_report.h"

#include <cstdio>

#include "runtime/spec/sizes.h"

namespace corral::runtime {

namespace {

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

// Why a limit fired when the status alone does not say it (the command exited or was
// signalled): a fork refused at the pids limit, a child OOM-killed, RLIMIT_CPU/FSIZE.
// Empty when no reason line is due (output truncation shows in the output itself).
std::string LimitReason(const RunOutcome& outcome, const LimitsSpec& limits) {
  if (!outcome.limit) return "";
  switch (*outcome.limit) {
    case LimitKind::kPids:
      return "corral: process limit reached (pids-limit " + std::to_string(limits.pids) +
             "): the command could not fork or start a thread (EAGAIN)\n";
    case LimitKind::kMemory:
      return "corral: a process of the command was killed: out of memory (limit " +
             FormatSize(limits.memory_bytes) + ")\n";
    case LimitKind::kCpuTime:
      return "corral: command killed: CPU time limit (" +
             Seconds(static_cast<double>(limits.cpu_time_seconds.value_or(0))) + " s)\n";
    case LimitKind::kFileSize:
      return "corral: command killed: file size limit (" + FormatSize(limits.file_size_bytes) +
             ")\n";
    case LimitKind::kWallTime:
    case LimitKind::kOutput:
      return "";
  }
  return "";
}

}  // namespace

std::string OutcomeReport(const RunOutcome& outcome, const LimitsSpec& limits, bool with_reason) {
  std::string out;
  for (const auto& w : outcome.warnings) out += "corral: warning: " + w + "\n";
  if (!with_reason) return out;
  if (outcome.setup_error) {
    out += "corral: " + outcome.setup_error->ToString() + "\n";
  } else if (outcome.status == RunStatus::kTimedOut) {
    out += "corral: command timed out after " + Seconds(limits.timeout_seconds) + " s\n";
  } else if (outcome.status == RunStatus::kOomKilled) {
    out +=
        "corral: command killed: out of memory (limit " + FormatSize(limits.memory_bytes) + ")\n";
  } else {
    out += LimitReason(outcome, limits);
  }
  if (std::string hint = LandlockHint(outcome); !hint.empty()) out += "corral: " + hint + "\n";
  return out;
}

}  // namespace corral::runtime
