// The AIO-compatible sandbox API: what DeerFlow's AioSandbox and the agent_sandbox SDK call
// on `sandbox_url` (docs/deerflow-contract.md, "AIO sandbox HTTP API"): /v1/sandbox,
// /v1/shell/* (real sessions: cd and export hold between calls), /v1/bash/*, /v1/file/*.
//
// The router (server/router.h) has already checked the sandbox's URL token and found the
// sandbox; this class only serves the part of the path after "/sandboxes/{id}/{token}/".
// Commands run inside the sandbox's persistent corral jail; every file operation goes
// through the jail provider's safe resolution (tools/providers/jail_sandbox.h): inside the
// sandbox's root, as the sandbox user. No second path logic here.
//
// Threads: Handle returns quickly; long waits (a shell command) finish on this class's own
// threads, which then call the Reply. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "server/http/message.h"

namespace corral::runtime {
class ExecSlotKeeper;
}

namespace corral::server {

// What the router knows of a sandbox when it hands a request over.
struct AioSandboxRef {
  std::string sandbox_id;   // DeerFlow's id (provisioner API), e.g. 16 hex digits
  std::string corral_name;  // the persistent corral sandbox (runtime/sandboxes/persistent.h)
};

struct AioApiOptions {
  size_t max_sessions_per_sandbox = 64;    // beyond: 429-free refusal in the envelope
  double default_no_change_timeout = 120;  // seconds, AIO's session default
  size_t shell_output_limit = 30000;       // chars kept when `truncate` is true
  // Exec slots for the sessions' shells (server.session_slots); null: every shell starts
  // the normal way. Must outlive the AioApi.
  runtime::ExecSlotKeeper* session_slots = nullptr;
};

class AioApi {
 public:
  explicit AioApi(AioApiOptions options);
  ~AioApi();  // kills every session's shell
  AioApi(const AioApi&) = delete;
  AioApi& operator=(const AioApi&) = delete;

  // `subpath` is the rest of the path, e.g. "v1/shell/exec" (no leading '/').
  // Unknown subpaths answer 404 {"detail":"Not Found"} (never for v1/bash/exec: DeerFlow
  // reads a 404 there as "this image has no bash API").
  void Handle(const AioSandboxRef& sandbox, std::string_view subpath, HttpRequest request,
              Reply reply);

  // The sandbox was deleted: end its sessions (their shells are killed).
  void ForgetSandbox(const std::string& sandbox_id);
  // Gives back what ended sessions held (threads, pipes) and closes implicit sessions idle
  // too long. Waits up to `deadline` for sessions that are closing (a deleted sandbox's,
  // whose shells die with it) so that their resources go now, not on some later call.
  // Called after a delete and by the daemon's periodic reaper; never on an I/O thread.
  void Tidy(std::chrono::steady_clock::time_point deadline);
  // SIGTERM: commands still running end (their callers get an answer) by `deadline`.
  void Shutdown(std::chrono::steady_clock::time_point deadline);

  // For GET /metrics.
  size_t live_sessions() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::server
