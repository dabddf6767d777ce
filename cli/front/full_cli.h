// Handing a command line over to the full CLI, corral-cli: next to this program in a
// build tree, in <prefix>/libexec/corral once installed. Freestanding (cli/front/sys.h).
#pragma once

namespace corral::cli::front {

// Overrides where corral-cli is looked for (like CORRAL_INIT_PROGRAM for corral-init).
inline constexpr char kCliProgramEnv[] = "CORRAL_CLI_PROGRAM";
// The environment variable that tells corral-cli which front program started it (for
// `corral bench`, which measures what users run).
inline constexpr char kFrontExeEnv[] = "CORRAL_FRONT_EXE";

// execve()s corral-cli with `argv` (argv[0] kept) and `envp` plus kFrontExeEnv; returns
// only on failure, after saying why on stderr, with corral's own failure code (125).
int ExecFullCli(char* const* argv, char* const* envp);

}  // namespace corral::cli::front
