#include "cli/docker_habits.h"

#include <initializer_list>

#include "base/edit_distance.h"

namespace corral::cli {

namespace {

struct Hint {
  std::initializer_list<std::string_view> names;
  std::string_view text;
};

constexpr std::string_view kCommands[] = {
    "run",   "create", "exec",    "cp",    "ps",      "stats",    "inspect", "logs",   "rm",
    "reap",  "pause",  "resume",  "diff",  "commit",  "snapshot", "fork",    "volume", "pool",
    "check", "tool",   "threads", "bench", "version", "serve",    "code",    "setup",  "config"};

constexpr std::string_view kNoImages =
    "corral has no images: it runs the host's binaries, or a directory tree given with "
    "--rootfs DIR";

// Docker verbs, each with the corral form of what it is used for.
const Hint kVerbHints[] = {
    {{"stop", "kill"}, "corral rm NAME kills everything in the sandbox and removes it"},
    {{"start", "restart"},
     "a removed sandbox cannot be started again; make a new one: corral create --name NAME"},
    {{"unpause"}, "corral resume NAME thaws a paused sandbox"},
    {{"attach"},
     "a sandbox has no main process to attach to; start a shell in it: corral exec -it NAME -- "
     "bash"},
    {{"top"}, "corral stats NAME, or corral exec NAME -- ps aux"},
    {{"images", "image", "pull", "push", "build", "save", "load", "import", "export", "tag", "rmi",
      "history", "login", "logout", "search"},
     kNoImages},
    {{"container"}, "corral's commands take no `container` prefix: corral ps, corral rm NAME, ..."},
    {{"network", "port"},
     "a jail has no network but its own loopback; reach a server from inside it: corral exec "
     "NAME -- curl http://127.0.0.1:PORT/"},
    {{"rename"}, "a sandbox's name is fixed when it is created (corral create --name NAME)"},
    {{"info", "system"}, "corral check reports what this host supports"},
};

// Docker options of run/create/exec that corral does not have, with the corral form.
const Hint kOptionHints[] = {
    {{"-d", "--detach"},
     "corral has no detached runs: corral create --name NAME, then start the command in the "
     "background in it: corral exec NAME -- bash -c 'nohup CMD >/tmp/out.log 2>&1 &'"},
    {{"-t", "--tty"},
     "a terminal is given per command: corral exec -it NAME -- bash, or corral run -it -- CMD"},
    {{"--name"},
     "a run's jail ends with its command; for a named sandbox that stays: corral create --name "
     "NAME, then corral exec NAME -- CMD"},
    {{"-p", "--publish", "-P", "--publish-all", "--expose"},
     "a jail has no network but its own loopback, so nothing can be published; reach a server "
     "from inside: corral exec NAME -- curl http://127.0.0.1:PORT/"},
    {{"--memory-swap", "--memory-swappiness"}, "a jail has no swap: --memory is the whole limit"},
    {{"--pids"}, "the process limit is --pids-limit N"},
    {{"--env-file"},
     "give each variable with -e NAME=VALUE (or -e NAME for the caller's value), "
     "or list them under env: in a --config file"},
    {{"--privileged", "--cap-add", "--security-opt", "--device", "--userns"},
     "corral grants no extra privileges from the command line; see the unsafe: section of "
     "config.example.yaml (--config FILE)"},
    {{"--entrypoint"}, "give the whole command after --: corral run [OPTIONS] -- CMD [ARGS...]"},
    {{"--restart"}, "corral does not restart commands"},
    {{"--platform", "--pull"}, kNoImages},
    {{"-l", "--label"}, "corral sandboxes have no labels; a name is given with create --name"},
    {{"-a", "--attach"}, "a run's output is always attached; -i passes stdin through"},
};

// "-p8080:80" and "--publish=8080:80" are -p and --publish.
bool OptionMatches(std::string_view given, std::string_view name) {
  if (given == name) return true;
  if (given.size() > name.size() && given.substr(0, name.size()) == name) {
    if (given[name.size()] == '=') return true;
    return name.size() == 2 && name[0] == '-' && name[1] != '-';  // short, value attached
  }
  return false;
}

}  // namespace

bool IsCorralCommand(std::string_view name) {
  for (std::string_view c : kCommands) {
    if (c == name) return true;
  }
  return false;
}

std::string UnknownCommandMessage(std::string_view verb) {
  std::string message = std::string(verb) + ": no such command; ";
  for (const Hint& hint : kVerbHints) {
    for (std::string_view name : hint.names) {
      if (name == verb) return message + std::string(hint.text);
    }
  }
  message += "the commands are";
  for (std::string_view c : kCommands) message += " " + std::string(c);
  return message + " (corral --help)";
}

std::string ImageLikeCommandHint(std::string_view command) {
  if (command.empty() || command[0] == '/' || command[0] == '.' || command[0] == '-') return "";
  const bool tagged = command.find(':') != std::string_view::npos;
  const bool pathed = command.find('/') != std::string_view::npos;
  if (!tagged && !pathed) return "";
  for (char c : command) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') ||
                         std::string_view("._-/:@").find(c) != std::string_view::npos;
    if (!allowed) return "";
  }
  return std::string(command) + " looks like a Docker image, and " + std::string(kNoImages) +
         ". Give the command itself: corral run [OPTIONS] -- CMD [ARGS...]";
}

std::string ClosestOption(std::string_view given, const std::vector<std::string>& known) {
  if (given.size() < 4 || given.substr(0, 2) != "--") return "";
  std::string_view name = given.substr(2, given.find('=') - 2);
  std::string best;
  size_t best_distance = 3;
  for (const std::string& candidate : known) {
    const size_t d = EditDistance(name, candidate);
    if (d < best_distance && d < candidate.size()) {
      best = candidate;
      best_distance = d;
    }
  }
  return best.empty() ? "" : "--" + best;
}

std::string UnknownOptionMessage(std::string_view subcommand, std::string_view option,
                                 const std::vector<std::string>& known) {
  std::string message = std::string(subcommand) + ": " + std::string(option) + ": ";
  for (const Hint& hint : kOptionHints) {
    for (std::string_view name : hint.names) {
      if (OptionMatches(option, name)) return message + "no such option; " + std::string(hint.text);
    }
  }
  if (std::string closest = ClosestOption(option, known); !closest.empty()) {
    return message + "no such option (did you mean " + closest + "?)";
  }
  return message + "no such option (corral " + std::string(subcommand) +
         " --help). A command whose own options come first goes after --: corral " +
         std::string(subcommand) + " [OPTIONS]" + (subcommand == "exec" ? " NAME" : "") +
         " -- CMD [ARGS...]";
}

}  // namespace corral::cli
