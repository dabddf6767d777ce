#include "cli/commands.h"

namespace corral::cli {

namespace {
std::vector<std::string>& Trailing() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void SetCommandAfterDoubleDash(std::vector<std::string> command) {
  Trailing() = std::move(command);
}

std::vector<std::string> CommandWithTrailing(const std::vector<std::string>& positional) {
  std::vector<std::string> out = positional;
  out.insert(out.end(), Trailing().begin(), Trailing().end());
  return out;
}

}  // namespace corral::cli
