// `corral pause NAME...` and `corral resume NAME...` (runtime/sandboxes/pause.h): as
// `docker pause/unpause`, each name printed once done, every failure said, exit 1 if any.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "runtime/sandboxes/pause.h"

namespace corral::cli {

namespace {

int Fail(const Error& e) {
  std::fprintf(stderr, "corral: %s\n", e.message().c_str());
  return 125;
}

int PauseOrResume(const std::vector<std::string>& names, bool pause) {
  int rc = 0;
  for (const std::string& name : names) {
    Status st = pause ? runtime::PauseSandbox(name) : runtime::ResumeSandbox(name);
    if (!st) {
      rc = Fail(st.error());
    } else {
      std::printf("%s\n", name.c_str());
    }
  }
  return rc;
}

}  // namespace

void AddPauseCommands(CLI::App& app, int* exit_code) {
  auto pause_names = std::make_shared<std::vector<std::string>>();
  CLI::App* pause = app.add_subcommand(
      "pause", "freeze every process of a sandbox (memory, files and sockets kept; no CPU used)");
  pause->add_option("sandbox", *pause_names, "names or ids")->required();
  pause->callback(
      [pause_names, exit_code] { *exit_code = PauseOrResume(*pause_names, /*pause=*/true); });

  auto resume_names = std::make_shared<std::vector<std::string>>();
  CLI::App* resume = app.add_subcommand("resume", "thaw a paused sandbox");
  resume->add_option("sandbox", *resume_names, "names or ids")->required();
  resume->callback(
      [resume_names, exit_code] { *exit_code = PauseOrResume(*resume_names, /*pause=*/false); });
}

}  // namespace corral::cli
