// `corral config explain FILE`: a config file as corral reads it, written back in corral's
// own keys (config.example.yaml's), whichever shape the file used - corral's, or the
// process-sandbox design's `sandbox: {mode, timeout, limits, filesystem, ...}`
// (config_design.h), whose defaults then show as the values they set. Parent process only.
//
// The output loads back (`corral run --config`) into the same JailSpec. Sections a jail only
// checks - DeerFlow's `sandbox:` and `skills:`, `server:`, `unsafe.no_auth` - are copied as
// written, so the output also configures `corral tool` and `corral serve` the same way.
#pragma once

#include <string>

#include "base/result.h"

namespace corral::runtime {

struct ExplainedConfig {
  std::string yaml;  // corral's keys, in config.example.yaml's order
  std::string json;  // the same tree as one JSON object (also the HTTP API's `spec` form)
};

// Loads `text` over corral's defaults, as `corral run --config` does (the same errors), and
// writes it in corral's keys: only the keys whose value differs from corral's defaults, or
// with `all` every key.
Result<ExplainedConfig> ExplainConfigText(const std::string& text, const std::string& origin,
                                          bool all);
Result<ExplainedConfig> ExplainConfigFile(const std::string& path, bool all);

}  // namespace corral::runtime
