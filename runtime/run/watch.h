// Watching a running command: the wait loop with the wall-clock deadline and the
// SIGTERM-then-SIGKILL grace, output drained into bounded captures, corral's own stop
// signals, and turning what was observed into a RunOutcome. Shared by one-shot runs
// (runtime/run/supervisor.cc) and execs into persistent sandboxes
// (runtime/sandboxes/persistent.cc). Parent side.
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <optional>

#include "base/result.h"
#include "base/unique_fd.h"
#include "cgroups/cgroup.h"
#include "jail/spawn.h"
#include "runtime/run/outcome.h"
#include "runtime/run/output_capture.h"
#include "runtime/run/run_types.h"
#include "runtime/run/signal_guard.h"
#include "runtime/run/stdio.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

using Clock = std::chrono::steady_clock;

// Where stop requests come from: corral's own signals, or the caller's interrupt stream
// (RunOptions::interrupt_fd), in which case the signal mask is not touched.
struct StopSources {
  explicit StopSources(const RunOptions& options) : interrupt_fd(options.interrupt_fd) {
    if (interrupt_fd < 0) signals.emplace();
  }
  int signal_fd() const { return signals ? signals->fd() : -1; }
  std::optional<SignalGuard> signals;
  int interrupt_fd;
};

struct Watch {
  jail::JailProcess* process = nullptr;  // the init (one-shot) or the command (exec)
  cgroups::Cgroup* cgroup = nullptr;     // the tree to stop; may be null
  Stdio* io = nullptr;
  OutputCapture* out = nullptr;
  OutputCapture* err = nullptr;
  int signal_fd = -1;     // a SignalGuard's signalfd, or -1
  int interrupt_fd = -1;  // RunOptions::interrupt_fd, or -1
  int report_fd = -1;     // >= 0: WaitForExit also returns once this is readable
  Clock::time_point deadline = Clock::time_point::max();
  double grace_seconds = 2;
  // Observed:
  bool timed_out = false;
  std::optional<int> interrupted_by;
};

// A Watch over `process` with the deadline and grace of `limits` (timeout_seconds counted
// from `start`; 0 = none).
Watch NewWatch(jail::JailProcess* process, cgroups::Cgroup* cgroup, Stdio* io, OutputCapture* out,
               OutputCapture* err, const StopSources& stops, const LimitsSpec& limits,
               Clock::time_point start);
// SIGKILL to the watched process and everything in the cgroup.
void KillNow(Watch& w);
// Returns once the watched process has exited (its pidfd is readable) or report_fd is
// readable; drains output,
// enforces the deadline (SIGTERM to the cgroup, SIGKILL after the grace) and reacts to
// corral's stop signals meanwhile.
void WaitForExit(Watch& w);
// Reads the capture pipes to EOF; for when every writer is dead (bounded to 2 s against
// a writer that escaped both the PID namespace and the cgroup).
void DrainToEof(Watch& w);
// Reads what is buffered in the capture pipes now, then closes them: background
// processes that an exec deliberately left may hold them open indefinitely.
void DrainAvailable(Watch& w);

// Fills status, signal, limit, figures and streams of `o` from what was observed.
// `wait_status` is the command's own (from the init's report, or from wait4 for an exec).
void FillOutcome(const LimitsSpec& limits, int wait_status, const Watch& w,
                 const cgroups::Stats& stats, const rusage& usage, RunOutcome* o);

}  // namespace corral::runtime
