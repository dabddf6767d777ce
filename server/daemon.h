// `corral serve`: loads the config, checks the listen address and the key, adopts the
// sandboxes a previous daemon left, serves HTTP until SIGTERM/SIGINT, then stops accepting,
// lets calls in flight finish until server.shutdown_grace has passed, and exits 0 — keeping
// every sandbox (the next daemon adopts them; `corral rm` removes them). Parent side; the
// process is multithreaded from here on.
#pragma once

#include <optional>
#include <string>

namespace corral::server {

struct ServeOptions {
  std::string config_path;            // empty: defaults
  std::optional<std::string> listen;  // overrides server.listen
  bool allow_remote = false;          // or server.allow_remote
};

// The process exit code: 0 after a clean stop, 125 when it could not start.
int RunServe(const ServeOptions& options);

}  // namespace corral::server
