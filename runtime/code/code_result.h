// The result of one `corral code run`: the jail's RunOutcome read through the runner's
// header line (the scan's findings, whether it refused), as the CLI, the daemon and the
// Python module show it. Parent side.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/run/outcome.h"

namespace corral::runtime::code {

// The exit code of a refused run (nothing ran): corral's own "could not run it".
inline constexpr int kRefusedExitCode = 125;

struct Finding {
  int line = 0;
  int col = 0;
  std::string name;     // the call, module or path the code named
  std::string key;      // the config key behind it: python.scan.deny_calls, ...
  std::string message;  // from the scanner
};

struct CodeResult {
  // stderr without the runner's header line; when refused, the refusal's lines instead
  // ("corral: refused: line N: ...", then that the code was not run).
  RunOutcome outcome;
  std::string status;     // ok | error | timeout | oom | killed | refused | setup_failed
  int exit_code = 0;      // CliExitCode(outcome); kRefusedExitCode when refused
  std::string scan_mode;  // deny | warn | off
  std::vector<Finding> findings;
  std::optional<double> scan_ms;  // in the jail: import of the scanner, parse and walk
};

// Reads and strips the header (only as the very first line of stderr and with `nonce`: the
// snippet cannot write before it), then derives status and exit code.
CodeResult InterpretOutcome(RunOutcome outcome, const std::string& nonce,
                            const std::string& scan_mode);

// {"status", "exit_code", "stdout", "stderr", "limit", "findings": [{line, col, name, key,
// message}], "scan_mode", "scan_ms", "outcome": <OutcomeToJson>}
std::string CodeResultToJson(const CodeResult& result);

// "line 3: os.system is denied (...)", one per finding, for the CLI's stderr.
std::string FindingLine(const Finding& finding);

}  // namespace corral::runtime::code
