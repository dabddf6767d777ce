// Launcher: one way of running a workload to completion — a rung of the layer ladder,
// corral itself, or a peer sandbox. The runner times Launch() from the outside, so a
// launcher's figure includes everything its user pays: setup, the command, teardown.
//
// Also the process helper every command-line launcher uses.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "bench/workloads.h"

namespace corral::bench {

class Launcher {
 public:
  virtual ~Launcher() = default;

  // Short name shown in tables ("bare fork+exec", "bwrap").
  virtual std::string name() const = 0;
  // "layer" (the ladder and corral) or "peer".
  virtual std::string group() const = 0;
  // The command line or mechanism, for the report.
  virtual std::string description() const = 0;

  // Called once before any Launch(); an error marks the launcher as skipped with its
  // message as the reason (e.g. "not installed").
  virtual Status Prepare() { return Ok(); }
  // Releases whatever Prepare() created (bundles, sandboxes, cgroup parents).
  virtual void Cleanup() {}
  // Why this launcher cannot run `w`, if it cannot (e.g. no python3 in a busybox rootfs).
  virtual std::optional<std::string> Unsupported(const Workload&) const { return std::nullopt; }
  // Runs `w` once; ok only if it exited 0.
  virtual Status Launch(const Workload& w) = 0;
  // Untimed, after each timed Launch() of the latency rounds: work the launcher defers
  // off its user's path (a warm pool refills here), done before the next launcher is
  // timed so that it neither counts as this launcher's latency nor slows the next one.
  // Throughput slices do not call it: there the deferred work competes for the CPU.
  virtual void Settle() {}
  // Whether Launch() may be called from several threads at once (throughput runs).
  virtual bool thread_safe() const { return true; }
};

// posix_spawn()s argv (argv[0] absolute) with stdin and stdout on /dev/null, waits, and
// returns ok if it exited 0; otherwise an error with the status and the tail of stderr.
Status SpawnAndWait(const std::vector<std::string>& argv);

// Same, but returns stdout (at most 1 MiB) on success.
Result<std::string> SpawnAndCapture(const std::vector<std::string>& argv);

// posix_spawn()s a long-running helper (a pool server) with stdin on /dev/null and
// stdout/stderr appended to `log_path`; the caller ends it (StopBackground).
Result<pid_t> SpawnBackground(const std::vector<std::string>& argv, const std::string& log_path);
// SIGTERM, then waits for it (SIGKILL after `grace_ms`).
void StopBackground(pid_t pid, int grace_ms = 5000);

// Creates or truncates the regular file `path` (0644) and writes all of `content`.
// (base/files.h WriteFile only writes existing files, as cgroup files are.)
Status WriteRegularFile(const std::string& path, const std::string& content);

// Absolute path of the `corral` program users run: the front program that started this
// corral-cli ($CORRAL_FRONT_EXE, cli/front/full_cli.h), else the running binary.
std::string CorralExe();

}  // namespace corral::bench
