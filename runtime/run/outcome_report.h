// The lines `corral run` and `corral exec` print on stderr after a command: its warnings,
// then — unless the caller asked for JSON — why corral stopped it or which limit it ran
// into (a setup failure, the timeout, the memory, pids, CPU time or file size limit) when
// the exit code alone would not say. Shared by the CLI
// and the pool server, which words it for the front program (cli/front).
#pragma once

#include <string>

#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

std::string OutcomeReport(const RunOutcome& outcome, const LimitsSpec& limits, bool with_reason);

}  // namespace corral::runtime
