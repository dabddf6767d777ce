// The subcommands of the corral CLI. Each file cli/<name>_command.cc adds one subcommand to
// the CLI11 app; its callback parses flags into runtime:: structs, calls runtime::, and
// stores the process exit code in *exit_code. No isolation logic lives here.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace corral::cli {

// The arguments after the first "--" on the command line (main.cc splits them off before
// parsing). A subcommand's command is its positional arguments followed by these.
void SetCommandAfterDoubleDash(std::vector<std::string> command);
std::vector<std::string> CommandWithTrailing(const std::vector<std::string>& positional);

void AddRunCommand(CLI::App& app, int* exit_code);
void AddPoolCommand(CLI::App& app, int* exit_code);
void AddCheckCommand(CLI::App& app, int* exit_code);
void AddSandboxCommands(CLI::App& app, int* exit_code);  // create exec ps stats rm reap
void AddToolCommands(CLI::App& app, int* exit_code);     // tool, threads
void AddBenchCommand(CLI::App& app, int* exit_code);
void AddVersionCommand(CLI::App& app, int* exit_code);

// "corral 0.1.0 (<commit>, <build type>)": `corral --version`.
std::string VersionLine();

}  // namespace corral::cli
