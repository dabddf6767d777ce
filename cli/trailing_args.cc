#include <cstdio>
#include <string_view>

#include "cli/commands.h"
#include "cli/docker_habits.h"

namespace corral::cli {

namespace {
std::vector<std::string>& Trailing() {
  static std::vector<std::string> args;
  return args;
}
std::vector<std::string>& Options() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void SetCommandAfterDoubleDash(std::vector<std::string> command) {
  Trailing() = std::move(command);
}

void SetArgsBeforeDoubleDash(std::vector<std::string> args) { Options() = std::move(args); }

std::vector<std::string> CommandWithTrailing(const std::vector<std::string>& positional) {
  std::vector<std::string> out = positional;
  out.insert(out.end(), Trailing().begin(), Trailing().end());
  return out;
}

std::vector<std::string> LongOptionNames(const CLI::App* sub) {
  std::vector<std::string> names;
  for (const CLI::Option* option : sub->get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back(name);
  }
  return names;
}

void SuggestForUnexpectedOptions(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const std::string& word : sub->remaining()) {
      if (std::string closest = ClosestOption(word, LongOptionNames(sub)); !closest.empty()) {
        std::fprintf(stderr, "corral: %s: %s: did you mean %s?\n", sub->get_name().c_str(),
                     word.c_str(), closest.c_str());
      }
    }
  }
}

Result<std::vector<std::string>> CommandOf(CLI::App* sub) {
  // prefix_command() stops option parsing at the first word that is no option of the
  // subcommand's; an option corral does not know lands there too (first), and is refused:
  // taking it as the command would run `-d` or `-it`.
  std::vector<std::string> words = sub->remaining();
  if (!words.empty() && words[0].size() > 1 && words[0][0] == '-') {
    return Error(ErrorCode::kInvalidArgument,
                 UnknownOptionMessage(sub->get_name(), words[0], LongOptionNames(sub)));
  }
  return CommandWithTrailing(words);
}

std::string FlagAsGiven(std::initializer_list<std::string_view> names, const std::string& value) {
  // CLI11 does not say which spelling it matched; the command line does.
  const std::vector<std::string>& args = Options();
  for (size_t i = 0; i < args.size(); ++i) {
    for (std::string_view name : names) {
      std::string_view arg = args[i];
      if (arg == name && i + 1 < args.size() && args[i + 1] == value) {
        return std::string(name) + " " + value;
      }
      if (arg.substr(0, name.size()) == name && arg.substr(name.size()) == "=" + value) {
        return std::string(name) + " " + value;
      }
      if (name.size() == 2 && arg.substr(0, 2) == name && arg.substr(2) == value) {
        return std::string(name) + " " + value;
      }
    }
  }
  return std::string(*names.begin()) + " " + value;
}

}  // namespace corral::cli
