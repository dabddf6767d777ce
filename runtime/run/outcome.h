// RunOutcome: what happened to one command, for the library, the CLI (`--json`) and later
// the HTTP API. The JSON shape is documented in README.md ("Outcome").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "jail/setup_record.h"

namespace corral::runtime {

enum class RunStatus { kExited, kSignaled, kTimedOut, kOomKilled, kSetupFailed };
const char* RunStatusName(RunStatus status);  // "exited", "timed_out", ...

// Which limit fired, if any.
enum class LimitKind { kMemory, kPids, kWallTime, kCpuTime, kOutput, kFileSize };
const char* LimitName(LimitKind limit);  // "memory", "wall_time", ...

struct StreamOutcome {
  std::string text;   // captured bytes (head + marker + tail when truncated)
  int64_t bytes = 0;  // everything the command wrote
  int64_t dropped_bytes = 0;
};

// Whether the command ran under Landlock (runtime/run/landlock_plan.h).
struct LandlockOutcome {
  bool enforced = false;
  int abi = 0;         // the kernel's Landlock ABI (0: none)
  bool tcp = false;    // TCP bind/connect fenced too
  std::string reason;  // why not enforced
};

// Who the command's uid/gid are on the host (runtime/run/identity.h).
struct IdentityOutcome {
  std::string mode;                     // reserved | host-uid | rootless
  uint32_t uid = 0, gid = 0;            // in the jail
  uint32_t host_uid = 0, host_gid = 0;  // what they are on the host
  std::string note;                     // why host-uid under identity: auto
};

struct RunOutcome {
  RunStatus status = RunStatus::kExited;
  int exit_code = 0;          // the command's exit status when status == kExited
  std::optional<int> signal;  // the signal that ended the command
  std::optional<LimitKind> limit;
  double wall_ms = 0;
  double cpu_user_ms = 0;
  double cpu_system_ms = 0;
  std::optional<int64_t> memory_peak_bytes;
  std::optional<int64_t> pids_peak;
  bool captured = false;  // stdout/stderr below are meaningful only when captured
  StreamOutcome stdout_stream;
  StreamOutcome stderr_stream;
  std::optional<jail::SetupFailure> setup_error;
  std::optional<int> interrupted_by;  // SIGINT/SIGTERM/SIGHUP received by corral itself
  bool pooled = false;                // ran in a jail prepared before it was asked for (a pool)
  std::vector<std::string> warnings;  // e.g. limits skipped under unsafe.allow_missing_limits
  int unwritable_mounts = 0;          // read-write mounts the sandbox user cannot write (warned)
  // network.mode allowlist: the proxy's summary (runtime/net/netproxy_launch.h), a JSON
  // object as text: connections, bytes, what was refused and why. Empty otherwise.
  std::string network_json;
  std::optional<LandlockOutcome> landlock;  // unset: corral failed before planning the jail
  // mode container (runtime/oci): the OCI runtime that ran it ("crun" | "runc"); empty in
  // mode process. JSON "runtime", present only when set.
  std::string oci_runtime;
  std::optional<IdentityOutcome> identity;
};

// What the supervisor saw of a command's end besides its wait status.
struct EndEvidence {
  bool timed_out = false;                         // the wall-clock limit fired
  int64_t oom_kills = 0;                          // OOM kills in the command's cgroup
  bool pids_limit_hit = false;                    // the pids limit refused a fork
  std::optional<int64_t> cpu_time_limit_seconds;  // limits.cpu_time_seconds
};

// Sets status, exit_code or signal, and which limit (if any) ended the command, from its
// wait status and `evidence`; reads the cpu_*_ms figures and the streams' dropped bytes
// already in `o`. The one reading of an end for process mode (runtime/run/watch.cc) and
// container mode (runtime/oci), so that both name the same limit for the same end.
void ClassifyEnd(int wait_status, const EndEvidence& evidence, RunOutcome* o);

// Exit code convention of `docker run`, plus timeout(1)'s 124:
// 125 setup failure, 126 not executable, 127 not found, 124 timed out, 128+N signal N
// (137 for an OOM kill), else the command's own status.
int CliExitCode(const RunOutcome& outcome);

// When the command failed under Landlock and its captured output says "Permission denied"
// (EACCES, Landlock's refusal), a line saying Landlock may have refused it and how to
// confirm — or, when a read-write mount the sandbox user cannot write was warned about, a
// line pointing at that warning's fix instead; else empty. Streamed output is not looked
// at (the caller sees it).
std::string LandlockHint(const RunOutcome& outcome);

// One JSON object (invalid UTF-8 in captured output is replaced with U+FFFD).
std::string OutcomeToJson(const RunOutcome& outcome);

// For `--json` callers when corral fails before a jail exists (invalid configuration, no
// cgroup, ...): the same shape, status "setup_failed", step "validate" for invalid input
// and "prepare" otherwise, exit_code 125.
std::string ErrorToJson(const Error& error);

}  // namespace corral::runtime
