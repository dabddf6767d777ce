// corral: the command-line front-end. Parses the subcommand and hands over to it.
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "jail/process_title.h"

int main(int argc, char** argv) {
  corral::jail::RegisterArgvArea(argc, argv);
  // Logs go to stderr so that `--json` output on stdout stays machine-readable.
  spdlog::set_default_logger(spdlog::stderr_color_st("corral"));
  spdlog::set_pattern("corral: %l: %v");
  spdlog::set_level(spdlog::level::warn);
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug for more

  CLI::App app{"corral: run untrusted commands in an isolated process tree"};
  app.require_subcommand(1);
  int exit_code = 0;
  corral::cli::AddRunCommand(app, &exit_code);
  corral::cli::AddCheckCommand(app, &exit_code);
  corral::cli::AddSandboxCommands(app, &exit_code);
  corral::cli::AddToolCommands(app, &exit_code);
  corral::cli::AddBenchCommand(app, &exit_code);
  // Everything after the first "--" is the command, verbatim. Splitting it off here keeps
  // the argument parser from ever reading the command's own flags.
  int parsed_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      parsed_argc = i;
      corral::cli::SetCommandAfterDoubleDash(std::vector<std::string>(argv + i + 1, argv + argc));
      break;
    }
  }
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // Usage errors are corral's own failures: 125, like docker run.
    return rc == 0 ? 0 : 125;
  }
  return exit_code;
}
