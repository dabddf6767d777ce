// What corral-cli says to Docker habits it does not share: a Docker-only command
// (`corral cp`, `corral stop`) or option (`corral run -d`, `-it`) gets one line naming the
// corral form, instead of CLI11's bare "A subcommand is required" / "not expected".
// corral-cli process only (cli/main.cc, the run/create/exec callbacks).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::cli {

// True for the subcommands corral-cli has (run, create, exec, ps, ...).
bool IsCorralCommand(std::string_view name);

// The full message for `corral VERB` when VERB is no corral command: the corral form of a
// Docker verb, or the list of commands. One line, without "corral: " or a newline.
std::string UnknownCommandMessage(std::string_view verb);

// The message for an option `subcommand` does not have, found where its options end (the
// first word CLI11 did not take). For a Docker option, its corral form; else a pointer to
// `--` for a command whose own options come first. One line, as above.
// `known`: the subcommand's long option names, without dashes, for "did you mean".
std::string UnknownOptionMessage(std::string_view subcommand, std::string_view option,
                                 const std::vector<std::string>& known = {});

// When `command` (a run's argv[0], not found in the jail) reads like a Docker image
// (ubuntu:22.04, library/python, ghcr.io/org/img:tag), the line saying corral has none and
// how to run the command instead; "" otherwise. One line, as above.
std::string ImageLikeCommandHint(std::string_view command);

// "--memory" for "--memroy" (or "--memroy=1g") when one of `known` (long names without
// dashes) is within two edits of it; "" otherwise, and for short options.
std::string ClosestOption(std::string_view given, const std::vector<std::string>& known);

}  // namespace corral::cli
