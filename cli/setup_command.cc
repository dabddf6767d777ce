// `corral setup ids [--start N] [--count N]`: reserves the host ids that root-mode jails run
// as (runtime/run/identity.h). Idempotent: a second run reports the existing reservation.
// `corral setup ids --remove` undoes it.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "runtime/run/identity.h"

namespace corral::cli {

void AddSetupCommand(CLI::App& app, int* exit_code) {
  auto* setup = app.add_subcommand("setup", "Prepare the host for corral (root)");
  setup->require_subcommand(1);
  auto* ids = setup->add_subcommand(
      "ids",
      "Reserve the host ids sandboxes run as: a corral line in /etc/subuid and /etc/subgid, "
      "checked against every account, group and subordinate range");
  auto start = std::make_shared<std::optional<uint32_t>>();
  auto count = std::make_shared<std::optional<uint32_t>>();
  ids->add_option(
      "--start", *start,
      "first id of the range (default " + std::to_string(runtime::kDefaultReservedStart) + ")");
  ids->add_option("--count", *count,
                  "how many ids (default " + std::to_string(runtime::kDefaultReservedCount) +
                      "; id 0 of the range is shared by one-shot runs)");
  auto remove = std::make_shared<bool>(false);
  ids->add_flag("--remove", *remove,
                "drop corral's lines instead (files sandboxes wrote keep their owners)")
      ->excludes(ids->get_option("--start"))
      ->excludes(ids->get_option("--count"));
  ids->callback([start, count, remove, exit_code] {
    if (::geteuid() != 0) {
      std::fprintf(stderr,
                   "corral setup ids: must run as root (it edits /etc/subuid and "
                   "/etc/subgid)\n");
      *exit_code = 1;
      return;
    }
    auto done = *remove ? runtime::ReleaseRange() : runtime::ReserveRange(*start, *count);
    if (!done) {
      std::fprintf(stderr, "corral setup ids: %s\n", done.error().message().c_str());
      *exit_code = 1;
      return;
    }
    std::printf("%s\n", done->c_str());
    *exit_code = 0;
  });
}

}  // namespace corral::cli
