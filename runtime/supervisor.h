// RunJail(): the whole path of one command — validate, create the cgroup, plan, spawn,
// wait with the wall-clock deadline while draining output under the caps, kill the whole
// tree, collect the figures, clean up — returning a RunOutcome.
//
// Parent side. While it runs, SIGINT/SIGTERM/SIGHUP to the calling process are taken
// over: they stop the jail (and are reported in RunOutcome::interrupted_by).
#pragma once

#include "base/result.h"
#include "jail/plan.h"
#include "jail/spawn.h"
#include "runtime/jail_cgroup.h"
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

// RunJail in two halves, for a pool of jails built before their commands are known
// (runtime/jail_pool.h). PrepareJail does everything but the command: validate, cgroup
// with limits, plan, clone, and the child builds the root and then waits. Destroying the
// PreparedJail kills it and removes its cgroup. RunPrepared hands it the command of
// `spec` (argv, env, working directory, timeout and output limit; everything else must be
// what the jail was prepared with: the caller checks) and supervises it like RunJail.
// A prepared jail runs one command, once.
struct PreparedJail {
  JailCgroup cgroup;
  jail::JailPlan plan;
  jail::JailProcess process;
};
Result<PreparedJail> PrepareJail(const JailSpec& spec);
Result<RunOutcome> RunPrepared(PreparedJail jail, const JailSpec& spec, const RunOptions& options);

}  // namespace corral::runtime
