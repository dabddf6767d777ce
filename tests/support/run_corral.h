// Running the corral binary (or any program) from a test, black-box: argv in; exit status,
// stdout and stderr out, under a wall-clock timeout. Parent (test) process only.
//
// Paths of the binaries under test come from compile definitions of the integration test
// target; corral_paths.h turns them into RunCorral()/RunProbe(). This file takes paths as
// arguments so the support library itself needs no definitions.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace corral::test {

struct RunOptions {
  // After this the program is SIGKILLed (by pid) and RunResult::timed_out is set.
  std::chrono::milliseconds timeout{60000};
  // Written to the program's stdin, which is then closed. Unset: stdin is /dev/null.
  // Not used with use_pty.
  std::optional<std::string> stdin_data;
  // Runs the program in a new session with a pty slave as controlling terminal and as
  // stdin, stdout and stderr; everything it writes is read from the master into `out`.
  bool use_pty = false;
  // When >= 0, the program starts with an extra fd of this number, not close-on-exec,
  // open on the host's "/" directory: a jail must not let it through.
  int stray_fd = -1;
  // Extra "KEY=VALUE" entries for the program's environment (on top of the test's).
  std::vector<std::string> env;
};

struct RunResult {
  std::vector<std::string> argv;
  bool exited = false;  // normal exit: exit_code is valid
  int exit_code = -1;
  int term_signal = 0;     // when killed by a signal
  bool timed_out = false;  // we killed it at RunOptions::timeout
  std::string out;
  std::string err;
  double wall_ms = 0;

  // Multi-line summary for assertion messages: argv, status, stdout and stderr (truncated).
  std::string Describe() const;
};

// Runs `binary` with `args` (argv[0] is `binary`). Errors only when the program could not
// be started or watched; a failing program is a RunResult.
Result<RunResult> RunProgram(const std::string& binary, const std::vector<std::string>& args,
                             const RunOptions& options = {});

// Starts `argv` (argv[0] is the program) in the background with the test's stdio and
// environment and records its pid for the leak checker; the caller waits for it. For
// tests that must kill a corral mid-run.
Result<pid_t> StartProgram(const std::vector<std::string>& argv);

// Where the integration tests bind the probe inside a jail.
inline constexpr char kProbeInJail[] = "/opt/probe/corral_probe";

// `run --json -v <probe>:/opt/probe/corral_probe:ro <corral_flags...> --
//  /opt/probe/corral_probe <probe_args...>`
std::vector<std::string> ProbeRunArgs(const std::string& probe_host_path,
                                      const std::vector<std::string>& corral_flags,
                                      const std::vector<std::string>& probe_args);

// One `corral run --json` and what it reported.
struct JailRun {
  RunResult run;           // the corral process itself
  nlohmann::json outcome;  // corral's --json outcome object
  // The command's stdout parsed as JSON (the probe prints one object); null when it is
  // empty or not JSON (command killed, exec failed, or not the probe).
  nlohmann::json probe;

  // Describe() of the run plus the outcome's status fields and captured stderr.
  std::string Describe() const;
};

// Runs corral with `args` (which must include --json) and parses its outcome. An error
// when corral's stdout is not exactly one JSON object: that is a contract violation.
Result<JailRun> RunJailed(const std::string& corral_binary, const std::vector<std::string>& args,
                          const RunOptions& options = {});
// The parsing half of RunJailed, for a run made otherwise.
Result<JailRun> ParseJailed(RunResult run);

// `out` without corral's own "corral: warning: ..." lines: under a pty (RunOptions::use_pty)
// they share the output with the command's.
std::string StripCorralWarnings(const std::string& out);

}  // namespace corral::test
