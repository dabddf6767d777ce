// Prints a RunOutcome the way `corral run` and `corral exec` do: the JSON object with
// --json; otherwise warnings and a one-line reason on stderr when corral stopped the
// command. Returns the CLI exit code.
#pragma once

#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::cli {

int ReportOutcome(const runtime::RunOutcome& outcome, const runtime::LimitsSpec& limits, bool json);

}  // namespace corral::cli
