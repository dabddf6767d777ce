// PLACEHOLDER until the benchmark lands (issue 6): registers nothing.
#include "cli/commands.h"

namespace corral::cli {
void AddBenchCommand(CLI::App&, int*) {}
}  // namespace corral::cli
