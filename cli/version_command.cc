// `corral version [--json]` and the text of `corral --version`.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/build_info.h"
#include "cli/commands.h"

namespace corral::cli {

std::string VersionLine() {
  const BuildInfo& b = GetBuildInfo();
  return std::string("corral ") + b.version + " (" + b.commit + ", " + b.build_type +
         (b.sanitize ? ", asan+ubsan" : "") + ")";
}

void AddVersionCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("version", "Show the version, git commit and build options");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print a JSON object");
  cmd->callback([json, exit_code] {
    const BuildInfo& b = GetBuildInfo();
    if (*json) {
      nlohmann::json j = {{"version", b.version},       {"commit", b.commit},
                          {"build_type", b.build_type}, {"compiler", b.compiler},
                          {"sanitize", b.sanitize},     {"static_deps", b.static_deps}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s\ncompiler: %s\nstatic deps: %s\n", VersionLine().c_str(), b.compiler,
                  b.static_deps ? "yes" : "no");
    }
    *exit_code = 0;
  });
}

}  // namespace corral::cli
