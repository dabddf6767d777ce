// What corral-cli says to Docker habits it does not share: a Docker-only command
// (`corral cp`, `corral stop`) or option (`corral run -d`, `-it`) gets one line naming the
// corral form, instead of CLI11's bare "A subcommand is required" / "not expected".
// corral-cli process only (cli/main.cc, the run/create/exec callbacks).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace corral::cli {

// True for the subcommands corral-cli has (run, create, exec, ps, ...).
bool IsCorralCommand(std::string_view name);

// The full message for `corral VERB` when VERB is no corral command: the corral form of a
// Docker verb, or the list of commands. One line, without "corral: " or a newline.
std::string UnknownCommandMessage(std::string_view verb);

// The message for an option `subcommand` does not have, found where its options end (the
// first word CLI11 did not take). For a Docker option, its corral form; else a pointer to
// `--` for a command whose own options come first. One line, as above.
std::string UnknownOptionMessage(std::string_view subcommand, std::string_view option);

}  // namespace corral::cli
