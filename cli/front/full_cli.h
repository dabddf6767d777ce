// Handing a command line over to the full CLI, corral-cli: next to this program in a
// build tree, in <prefix>/libexec/corral once installed.
#pragma once

#include <string>
#include <vector>

namespace corral::cli::front {

// Overrides where corral-cli is looked for (like CORRAL_INIT_PROGRAM for corral-init).
inline constexpr char kCliProgramEnv[] = "CORRAL_CLI_PROGRAM";

// The environment variable that tells corral-cli which front program started it (for
// `corral bench`, which measures what users run).
inline constexpr char kFrontExeEnv[] = "CORRAL_FRONT_EXE";

// execv()s corral-cli with `args` (args[0] kept); returns only on failure, after saying
// why on stderr, with corral's own failure code (125).
int ExecFullCli(const std::vector<std::string>& args);

}  // namespace corral::cli::front
