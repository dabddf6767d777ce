// The daemon's figures for `corral bench`: a real `corral serve` on loopback, driven over
// HTTP the way DeerFlow drives it (provisioner API, then the AIO shell API of the sandbox
// URL it hands out).
//
//   create -> first exec   POST /api/sandboxes, then POST {sandbox_url}/v1/shell/exec of
//                          `true` until it answers success: what a new thread waits for
//   exec, fresh session    POST v1/shell/exec of `true` without a session id, as DeerFlow's
//                          bash tool calls it (each call gets a fresh shell session), back
//                          to back, and with kServePauseMs between calls as an agent's
//                          model turns leave them (the daemon keeps a spare shell started
//                          per sandbox; back to back, a call can find it still starting)
//   exec, same session     the same with the id of a live session (cd/export carry over)
//   idle                   the daemon's RSS and the host's MemAvailable with every sandbox
//                          of the run up and idle
//
// Each call is a new loopback TCP connection (libcurl, tools/providers/http_client.h), as a
// client without keep-alive makes. The daemon runs with its own temp base dir and runtime
// dir; every sandbox is deleted and the daemon stopped (SIGTERM) at the end.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/progress.h"
#include "bench/results.h"

namespace corral::bench {

inline constexpr int kServePauseMs = 200;

// Runs `corral serve` (corral_exe) with `count` sandboxes; `exec_rounds` calls per exec row.
ServeFigures MeasureServe(const std::string& corral_exe, int count, int exec_rounds,
                          Progress& progress);

// The daemon targets, judged on these figures (an extrapolation from fewer
// sandboxes than a target names is shown as an estimate, never judged).
void AddServeTargets(const ServeFigures& f, std::vector<TargetResult>* targets);

// The report's "corral serve" section, and its JSON object.
std::string FormatServe(const ServeFigures& f);
nlohmann::json ServeJson(const ServeFigures& f);

}  // namespace corral::bench
