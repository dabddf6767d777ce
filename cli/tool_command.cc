// PLACEHOLDER until the tool layer lands (issue 5): registers nothing.
#include "cli/commands.h"

namespace corral::cli {
void AddToolCommands(CLI::App&, int*) {}
}  // namespace corral::cli
