// RunJail(): the whole path of one command — validate, create the cgroup, plan, spawn,
// wait with the wall-clock deadline while draining output under the caps, kill the whole
// tree, collect the figures, clean up — returning a RunOutcome.
//
// Parent side. While it runs, SIGINT/SIGTERM/SIGHUP to the calling process are taken
// over: they stop the jail (and are reported in RunOutcome::interrupted_by).
#pragma once

#include "base/result.h"
#include "runtime/outcome.h"
#include "runtime/spec.h"

namespace corral::runtime {

struct RunOptions {
  // true: stdout/stderr go through pipes into bounded captures (RunOutcome::*_stream).
  // false: the command writes straight to the caller's stdout/stderr.
  bool capture_output = false;
  // true: the command reads the caller's stdin; false: /dev/null.
  bool pass_stdin = false;
};

// Errors are corral's own failures before a jail exists (invalid spec, no cgroup where one
// is required, ...). A jail whose setup failed is an outcome (status kSetupFailed).
Result<RunOutcome> RunJail(const JailSpec& spec, const RunOptions& options);

}  // namespace corral::runtime
