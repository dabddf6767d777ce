// Prints a RunOutcome the way `corral run` and `corral exec` do: the JSON object with
// --json; otherwise warnings and a one-line reason on stderr when corral stopped the
// command. Returns the CLI exit code.
#pragma once

#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::cli {

int ReportOutcome(const runtime::RunOutcome& outcome, const runtime::LimitsSpec& limits, bool json);

// A command corral refused or could not carry out: "corral: MESSAGE" on stderr and, with
// `json`, the error as JSON on stdout. Returns 125, the exit code of corral's own failures
// (as docker run's).
int ReportRefusal(const Error& e, bool json = false);

}  // namespace corral::cli
