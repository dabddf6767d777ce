// `corral config explain FILE [--json] [--all]`: the file in corral's own keys, whichever
// shape it was written in (runtime/spec/config_explain.h).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "runtime/spec/config_explain.h"

namespace corral::cli {

namespace {

struct ExplainFlags {
  std::string file;
  bool json = false;
  bool all = false;
};

int Explain(const ExplainFlags& flags) {
  auto explained = runtime::ExplainConfigFile(flags.file, flags.all);
  if (!explained) {
    std::fprintf(stderr, "corral: %s\n", explained.error().message().c_str());
    return 125;
  }
  const std::string& text = flags.json ? explained->json + "\n" : explained->yaml;
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void AddConfigCommand(CLI::App& app, int* exit_code) {
  CLI::App* config = app.add_subcommand("config", "read a config file the way corral does");
  config->require_subcommand(1);
  CLI::App* explain = config->add_subcommand(
      "explain",
      "print FILE in corral's own keys (either shape: corral's, or the process-sandbox "
      "design's sandbox: section), as corral run --config would use it");
  auto flags = std::make_shared<ExplainFlags>();
  explain->add_option("file", flags->file, "the config file")->required();
  explain->add_flag("--json", flags->json, "print one JSON object instead of YAML");
  explain->add_flag("--all", flags->all,
                    "every key, not only those that differ from corral's defaults");
  explain->callback([flags, exit_code] { *exit_code = Explain(*flags); });
}

}  // namespace corral::cli
