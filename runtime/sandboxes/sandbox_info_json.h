// The JSON form of a sandbox's state, limits and usage: what `corral ps --json`,
// `corral stats --json` and the daemon's /api/corral/v1/sandboxes answer, from one place so
// that the CLI and the HTTP API never drift apart. Parent side.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {

// "running", "paused" or "dead".
const char* SandboxStateName(const SandboxInfo& info);
// {name, id, state, init_pid, age_seconds, idle_seconds, idle_timeout_seconds, processes,
//  limits, paused_seconds (only while paused), and — where the cgroup reports them — memory_bytes,
//  memory_peak_bytes, cpu_user_usec, cpu_system_usec, pids, pids_peak (null when unknown),
//  oom_kills}.
nlohmann::json SandboxInfoJson(const SandboxInfo& info);
// {memory_bytes, cpus, pids, timeout_seconds}
nlohmann::json SandboxLimitsJson(const LimitsSpec& limits);

}  // namespace corral::runtime
