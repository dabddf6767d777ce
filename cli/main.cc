// corral: the command-line front-end. Parses the subcommand and hands over to it.
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // Usage errors are corral's own failures: 125, like docker run.
    return rc == 0 ? 0 : 125;
  }
  return exit_code;
}
