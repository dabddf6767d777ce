// The subcommands of the corral CLI. Each file cli/<name>_command.cc adds one subcommand to
// the CLI11 app; its callback parses flags into runtime:: structs, calls runtime::, and
// stores the process exit code in *exit_code. No isolation logic lives here.
#pragma once

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace corral::cli {

// The arguments after the first "--" on the command line (main.cc splits them off before
// parsing). A subcommand's command is its positional arguments followed by these.
void SetCommandAfterDoubleDash(std::vector<std::string> command);
std::vector<std::string> CommandWithTrailing(const std::vector<std::string>& positional);
// The arguments before the first "--" (argv[1...]), as typed; for FlagAsGiven.
void SetArgsBeforeDoubleDash(std::vector<std::string> args);

// The command of a subcommand parsed with prefix_command(): the first word that is none of
// its options and every word after it (`corral run ls -la /`), then the words after "--".
// kInvalidArgument, with the corral form of a Docker option, when that first word is an
// option the subcommand does not have (`-d`, `-t` of `-it`).
Result<std::vector<std::string>> CommandOf(CLI::App* sub);

// A subcommand's long option names, without dashes (for "did you mean").
std::vector<std::string> LongOptionNames(const CLI::App* sub);
// After CLI11 refused words it did not expect: "did you mean --json?" for each that is
// within two edits of an option of the subcommand it was given to.
void SuggestForUnexpectedOptions(const CLI::App& app);

// "-v /nope:/work": the spelling among `names` that the user gave with `value` ("-v" or
// "--mount"), then the value; the first name when it cannot be told.
std::string FlagAsGiven(std::initializer_list<std::string_view> names, const std::string& value);

void AddRunCommand(CLI::App& app, int* exit_code);
void AddPoolCommand(CLI::App& app, int* exit_code);
void AddCheckCommand(CLI::App& app, int* exit_code);
void AddSandboxCommands(CLI::App& app, int* exit_code);  // create exec rm reap pause resume, and:
void AddSandboxInfoCommands(CLI::App& app, int* exit_code);  // ps stats inspect logs
void AddCpCommand(CLI::App& app, int* exit_code);            // cp (cp_command.cc)
void AddVolumeCommands(CLI::App& app, int* exit_code);       // volume create/ls/inspect/rm
void AddWorkspaceCommands(CLI::App& app, int* exit_code);    // diff, commit
void AddSnapshotCommands(CLI::App& app, int* exit_code);  // snapshot (ls/inspect/rm/budget), fork
void AddToolCommands(CLI::App& app, int* exit_code);      // tool, threads
void AddBenchCommand(CLI::App& app, int* exit_code);
void AddServeCommand(CLI::App& app, int* exit_code);  // the HTTP daemon
void AddVersionCommand(CLI::App& app, int* exit_code);
void AddCodeCommand(CLI::App& app, int* exit_code);    // code run (code_command.cc)
void AddSetupCommand(CLI::App& app, int* exit_code);   // setup ids (setup_command.cc)
void AddConfigCommand(CLI::App& app, int* exit_code);  // config explain (config_command.cc)

// "corral 0.1.0 (<commit>, <build type>)": `corral --version`.
std::string VersionLine();

}  // namespace corral::cli
