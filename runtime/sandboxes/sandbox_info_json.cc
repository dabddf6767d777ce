#include "runtime/sandboxes/sandbox_info_json.h"

#include "runtime/net/netproxy_launch.h"
#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {

namespace {

nlohmann::json OptionalJson(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

const char* SandboxStateName(const SandboxInfo& info) {
  if (!info.alive) return "dead";
  return info.paused_seconds ? "paused" : "running";
}

nlohmann::json SandboxLimitsJson(const LimitsSpec& l) {
  return {{"memory_bytes", l.memory_bytes},
          {"cpus", l.cpus},
          {"pids", l.pids},
          {"timeout_seconds", l.timeout_seconds}};
}

nlohmann::json SandboxInfoJson(const SandboxInfo& info) {
  nlohmann::json j = {{"name", info.record.name},
                      {"id", info.record.id},
                      {"state", SandboxStateName(info)},
                      {"init_pid", info.record.init_pid},
                      {"age_seconds", info.age_seconds},
                      {"idle_seconds", info.idle_seconds},
                      {"idle_timeout_seconds", info.record.idle_timeout_seconds},
                      {"processes", info.processes},
                      {"limits", SandboxLimitsJson(info.record.spec.limits)},
                      // false: a rootless sandbox without a cgroup (allow_missing_limits)
                      {"limits_enforced", !info.record.cgroup_name.empty()}};
  if (info.paused_seconds) j["paused_seconds"] = *info.paused_seconds;
  if (info.stats) {
    const auto& s = *info.stats;
    j["memory_bytes"] = OptionalJson(s.memory_current_bytes);
    j["memory_peak_bytes"] = OptionalJson(s.memory_peak_bytes);
    j["cpu_user_usec"] = OptionalJson(s.cpu_user_usec);
    j["cpu_system_usec"] = OptionalJson(s.cpu_system_usec);
    j["pids"] = OptionalJson(s.pids_current);
    j["pids_peak"] = OptionalJson(s.pids_peak);
    j["oom_kills"] = s.oom_kills;
  }
  // network.mode allowlist: the proxy's running summary (connections, bytes, refusals).
  if (info.record.spec.network.mode == NetworkMode::kAllowlist) {
    std::string summary = net::ReadSummary(NetworkSummaryPath(info.record.name));
    j["network"] = summary.empty() ? nlohmann::json{{"mode", "allowlist"}}
                                   : nlohmann::json::parse(summary, nullptr, false);
  }
  return j;
}

}  // namespace corral::runtime
