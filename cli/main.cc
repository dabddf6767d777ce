// corral: the command-line front-end. Parses the subcommand and hands over to it.
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/docker_habits.h"
#include "jail/process_title.h"

namespace {

struct CommandGroup {
  std::initializer_list<std::string_view> names;
  void (*add)(CLI::App&, int*);
};

// Only the group of the subcommand named first is built when there is one: building
// every subcommand's options costs more than a pooled `corral run` spends in its jail.
// Anything else (--help, a typo) gets them all, for the help text and the error.
void AddCommands(CLI::App& app, std::string_view first_arg, int* exit_code) {
  using namespace corral::cli;
  static const CommandGroup kGroups[] = {
      {{"run"}, AddRunCommand},
      {{"pool"}, AddPoolCommand},
      {{"check"}, AddCheckCommand},
      {{"create", "exec", "ps", "stats", "inspect", "logs", "rm", "reap", "pause", "resume"},
       AddSandboxCommands},
      {{"cp"}, AddCpCommand},
      {{"volume"}, AddVolumeCommands},
      {{"diff", "commit"}, AddWorkspaceCommands},
      {{"snapshot", "fork"}, AddSnapshotCommands},
      {{"tool", "threads"}, AddToolCommands},
      {{"bench"}, AddBenchCommand},
      {{"serve"}, AddServeCommand},
      {{"version"}, AddVersionCommand},
      {{"code"}, AddCodeCommand},
      {{"setup"}, AddSetupCommand},
      {{"config"}, AddConfigCommand},
  };
  for (const CommandGroup& group : kGroups) {
    for (std::string_view name : group.names) {
      if (name == first_arg) return group.add(app, exit_code);
    }
  }
  for (const CommandGroup& group : kGroups) group.add(app, exit_code);
}

}  // namespace

int main(int argc, char** argv) {
  corral::jail::RegisterArgvArea(argc, argv);
  // Logs go to stderr so that `--json` output on stdout stays machine-readable.
  spdlog::set_default_logger(spdlog::stderr_color_st("corral"));
  spdlog::set_pattern("corral: %l: %v");
  spdlog::set_level(spdlog::level::warn);
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug for more

  CLI::App app{"corral: run untrusted commands in an isolated process tree"};
  if (argc < 2) {
    std::fprintf(stderr,
                 "corral: no command given. Try 'corral run -- CMD' to run one isolated "
                 "command, or 'corral --help' for every command.\n");
    return 125;
  }
  // A word that is no corral command (a Docker verb: stop, pull, ...) gets its corral form,
  // not CLI11's "A subcommand is required".
  if (std::string_view first = argv[1];
      !first.empty() && first[0] != '-' && !corral::cli::IsCorralCommand(first)) {
    std::fprintf(stderr, "corral: %s\n", corral::cli::UnknownCommandMessage(first).c_str());
    return 125;
  }
  app.require_subcommand(1);
  app.set_version_flag("--version", corral::cli::VersionLine());
  int exit_code = 0;
  AddCommands(app, argc > 1 ? argv[1] : "", &exit_code);
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
  corral::cli::SetArgsBeforeDoubleDash(std::vector<std::string>(argv + 1, argv + parsed_argc));
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      corral::cli::SuggestForUnexpectedOptions(app);
    }
    // Usage errors are corral's own failures: 125, like docker run.
    return rc == 0 ? 0 : 125;
  }
  return exit_code;
}
