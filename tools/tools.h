// The agent tools — bash, ls, read_file, write_file, str_replace, glob, grep — with
// DeerFlow's parameters, defaults, limits and messages (docs/deerflow-contract.md
// §3). They speak only to runtime::Sandbox, so they behave the same over every provider;
// what differs (path validation on the host, isolation in a jail) is the provider's job.
// Each tool returns exactly the text an agent gets; failures are texts starting "Error: ".
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/spec/provider_config.h"
#include "tools/providers/sandbox.h"

namespace corral::tools {

struct ToolSettings {
  int bash_output_max_chars = 20000;
  int read_file_output_max_chars = 50000;
  int ls_output_max_chars = 20000;
  double bash_command_timeout = 600;
  int glob_max_results = 200;  // config cap (DeerFlow tools[glob].max_results)
  int grep_max_results = 100;  // config cap (DeerFlow tools[grep].max_results)
  // grep's per-call work bounds (limits grep_max_bytes_scanned, grep_max_seconds).
  int64_t grep_max_bytes_scanned = runtime::kGrepMaxBytesScanned;
  double grep_max_seconds = runtime::kGrepMaxSeconds;
  int64_t write_file_max_bytes = 81920;  // single non-append call; <= 0 disables
  runtime::EnvList env;                  // injected into every bash call (skill secrets, ...)
  std::vector<std::string> secrets;      // values replaced by "[redacted]" in bash output
};

// From the `sandbox:` section (environment becomes env, its long values secrets).
ToolSettings SettingsFrom(const runtime::ProviderConfig& config);

struct ToolOutput {
  std::string text;
  bool ok = true;                    // false when text is an "Error: ..." message
  std::optional<int> exit_code;      // bash only
  std::optional<std::string> limit;  // which limit fired: wall_time, output, write_size ...
};

// The names, in DeerFlow's order.
const std::vector<std::string>& ToolNames();

// Runs tool `name` with JSON `args` (DeerFlow's parameter names; "description" accepted
// and ignored). Unknown tools and malformed args give an "Error: ..." text.
ToolOutput RunTool(runtime::Sandbox& sandbox, const std::string& name, const nlohmann::json& args,
                   const ToolSettings& settings);

}  // namespace corral::tools
