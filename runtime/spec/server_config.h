// The `server:` section of the config file: what `corral serve` (server/) listens on, its
// API key and the limits of its HTTP server. config.example.yaml documents every key. The
// main loader (runtime/spec/config.h) checks this section too, so a typo is an error for
// every command that reads the file; only `corral serve` uses the values. Parent side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/spec/spec.h"

namespace YAML {
class Node;
}

namespace corral::runtime {

struct ServerConfig {
  std::string listen = "127.0.0.1:8002";  // HOST:PORT, [V6]:PORT or unix:/PATH
  bool allow_remote = false;              // a non-loopback listen address needs this
  // Extra Host header values (HOST:PORT) accepted besides the listen address, e.g. the
  // name a gateway in a container uses ("host.docker.internal:8002").
  std::vector<std::string> allowed_hosts;
  // `X-API-Key` of /api/*. "$NAME" reads the variable NAME. Empty: api_key_file, then the
  // systemd credential "corral-api-key", then $CORRAL_API_KEY (server/http/auth.h).
  std::string api_key;
  // A file that holds the key (owner-only: mode 0600 or 0400), e.g. /etc/corral/api-key.
  std::string api_key_file;
  int io_threads = 2;                    // Asio threads (HTTP parsing, routing)
  int64_t max_header_bytes = 16 * 1024;  // request line + headers
  int64_t max_body_bytes = 140 * kMiB;   // a 100 MiB file as base64 inside JSON
  double header_timeout = 10;            // seconds to read a request's headers
  double body_timeout = 300;             // seconds to read a body / write a response
  double keepalive_timeout = 75;         // seconds an idle keep-alive connection stays
  int max_connections = 1024;            // open connections, all clients
  int max_connections_per_client = 64;   // per peer address (TCP only)
  int max_in_flight = 256;               // requests being handled; beyond: 429
  int max_sandboxes = 1000;              // hard cap; create beyond it: 429
  int max_execs = 64;                    // corral-API execs and code runs at once; beyond: 429
  // Warm sandboxes whose first shell session finds an exec slot ready (a process already in
  // the sandbox, its cgroup joined; runtime/pool/exec_slot_keeper.h), at most; 0: none.
  int session_slots = 32;
  double shutdown_grace = 10;    // SIGTERM: seconds in-flight calls may finish
  std::string access_log;        // "" = stderr, "off", or a file path (appended)
  bool metrics_need_key = true;  // GET /metrics requires X-API-Key
  bool no_auth = false;  // from `unsafe.no_auth`: serve /api/* without a key (logged loudly)
};

// Reads `server` (undefined/null: defaults). Every problem is reported, one line each:
// `server.max_in_flight: must be > 0`.
Status LoadServerConfig(const YAML::Node& server, ServerConfig* config);

// Reads the whole file's `server:` section and `unsafe.no_auth` (the rest is other
// loaders' business).
Status LoadServerConfigFile(const std::string& path, ServerConfig* config);

}  // namespace corral::runtime
