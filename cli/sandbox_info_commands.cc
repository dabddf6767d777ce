// Looking at persistent sandboxes: `corral ps`, `stats`, `inspect`, `logs`. Tables and
// lines for people (sizes in MiB/GiB, times in s/min/h, each limit beside its usage);
// `--json` (and `inspect`, always JSON) for programs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/human_units.h"
#include "cli/outcome_report.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/sandbox_info_json.h"
#include "runtime/sandboxes/unlisted_inits.h"
#include "runtime/spec/spec_json.h"

namespace corral::cli {

namespace {

std::string Seconds(int64_t usec) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(usec) / 1e6);
  return usec >= 120'000'000 ? Duration(static_cast<double>(usec) / 1e6) : std::string(buf);
}

// "12.3MiB/512MiB": usage beside the limit; "-" for usage the cgroup does not report.
std::string MemoryText(const runtime::SandboxInfo& info) {
  std::string used = info.stats && info.stats->memory_current_bytes
                         ? Size(*info.stats->memory_current_bytes)
                         : "-";
  return used + "/" + Size(info.record.spec.limits.memory_bytes);
}

std::string CpusText(double cpus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", cpus);
  return buf;
}

int Ps(bool json) {
  // Say so rather than list nothing when a non-root caller has no runtime directory.
  auto dir = runtime::UsableRuntimeDir();
  if (!dir) {
    std::fprintf(stderr, "corral: %s\n", dir.error().message().c_str());
    return 125;
  }
  std::vector<runtime::UnreadableRecord> unreadable;
  auto list = runtime::ListSandboxes(&unreadable);
  for (const auto& u : unreadable) {  // never a silent gap in the list
    if (u.name.empty()) {
      std::fprintf(stderr, "corral: warning: cannot list sandboxes: %s%s%s\n", u.path.c_str(),
                   u.path.empty() ? "" : ": ", u.why.c_str());
    } else {
      std::fprintf(stderr,
                   "corral: warning: sandbox %s is not listed: its record cannot be read (%s); "
                   "`corral rm %s` removes it\n",
                   u.name.c_str(), u.why.c_str(), u.name.c_str());
    }
  }
  // Sandboxes of this user made under another runtime directory (another shell's): never
  // an empty list that hides running sandboxes.
  if (std::vector<pid_t> others = runtime::UnlistedSandboxInits(list); !others.empty()) {
    std::string pids;
    for (pid_t pid : others) pids += (pids.empty() ? "" : " ") + std::to_string(pid);
    std::fprintf(stderr,
                 "corral: note: %zu more sandbox(es) of yours are running that %s does not "
                 "list (init pids %s): made with another CORRAL_RUNTIME_DIR or "
                 "XDG_RUNTIME_DIR; run ps and rm with that one set, or kill those pids\n",
                 others.size(), dir->c_str(), pids.c_str());
  }
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& info : list) j.push_back(runtime::SandboxInfoJson(info));
    std::cout << j.dump() << std::endl;
    return 0;
  }
  // NAME as wide as the longest name (thread sandboxes' th-... names are 35 characters):
  // a name is what the other commands take, so it is never cut.
  int name_width = 4;
  for (const auto& info : list) {
    name_width = std::max(name_width, static_cast<int>(info.record.name.size()));
  }
  std::printf("%-*s  %-12s  %-7s  %6s  %6s  %9s  %17s  %4s\n", name_width, "NAME", "ID", "STATE",
              "AGE", "IDLE", "PROCS", "MEMORY", "CPUS");
  for (const auto& info : list) {
    // A rootless sandbox without a cgroup (unsafe.allow_missing_limits): nothing counted,
    // nothing enforced; never show its configured limits as if they held.
    const bool cgroup = !info.record.cgroup_name.empty();
    const std::string procs =
        cgroup ? std::to_string(info.processes) + "/" + std::to_string(info.record.spec.limits.pids)
               : "-";
    std::printf("%-*s  %-12s  %-7s  %6s  %6s  %9s  %17s  %4s\n", name_width,
                info.record.name.c_str(), info.record.id.c_str(), runtime::SandboxStateName(info),
                Duration(info.age_seconds).c_str(), Duration(info.idle_seconds).c_str(),
                procs.c_str(), cgroup ? MemoryText(info).c_str() : "not enforced",
                cgroup ? CpusText(info.record.spec.limits.cpus).c_str() : "-");
  }
  return 0;
}

void PrintStatsLines(const runtime::SandboxInfo& info) {
  const runtime::LimitsSpec& limits = info.record.spec.limits;
  auto line = [](const char* key, const std::string& value) {
    std::printf("%-10s %s\n", key, value.c_str());
  };
  line("name", info.record.name);
  line("id", info.record.id);
  line("state", info.paused_seconds
                    ? "paused for " + Duration(*info.paused_seconds) + " (`corral resume` thaws it)"
                    : std::string(runtime::SandboxStateName(info)));
  line("age", Duration(info.age_seconds));
  const double idle_timeout = info.record.idle_timeout_seconds;
  line("idle", Duration(info.idle_seconds) + " (idle timeout " +
                   (idle_timeout > 0 ? Duration(idle_timeout) : std::string("none")) + ")");
  const auto* s = info.stats ? &*info.stats : nullptr;
  auto peak = [](const std::optional<int64_t>& v, auto show) {
    return v ? " (peak " + show(*v) + ")" : std::string();
  };
  auto count = [](int64_t n) { return std::to_string(n); };
  if (info.record.cgroup_name.empty()) {
    // Rootless without a cgroup (unsafe.allow_missing_limits): nothing is counted, and of
    // the limits only the pids one holds (as RLIMIT_NPROC); never show the others as if.
    line("processes",
         "- (not counted: no cgroup; at most " + std::to_string(limits.pids) + " as RLIMIT_NPROC)");
    line("memory", "- (no limit: no cgroup, so limits.memory " + Size(limits.memory_bytes) +
                       " is not enforced)");
    line("cpu",
         "- (no limit: no cgroup, so limits.cpus " + CpusText(limits.cpus) + " is not enforced)");
    return;
  }
  line("processes", std::to_string(info.processes) + " / " + std::to_string(limits.pids) +
                        (s ? peak(s->pids_peak, count) : ""));
  line("memory", MemoryText(info) + (s ? peak(s->memory_peak_bytes, Size) : ""));
  std::string cpu = "-";
  if (s && s->cpu_user_usec && s->cpu_system_usec) {
    cpu = Seconds(*s->cpu_user_usec) + " user, " + Seconds(*s->cpu_system_usec) + " system";
  }
  line("cpu", cpu + " (limit " + CpusText(limits.cpus) + " cpus)");
  if (s) line("oom kills", std::to_string(s->oom_kills));
}

int Stats(const std::string& sandbox, bool json) {
  auto info = runtime::InspectSandbox(sandbox);
  if (!info) return ReportRefusal(info.error());
  if (json) {
    std::cout << runtime::SandboxInfoJson(*info).dump() << std::endl;
    return 0;
  }
  PrintStatsLines(*info);
  return 0;
}

int Inspect(const std::string& sandbox) {
  auto info = runtime::InspectSandbox(sandbox);
  if (!info) return ReportRefusal(info.error());
  nlohmann::json spec = nlohmann::json::parse(runtime::SpecToJson(info->record.spec));
  nlohmann::json j = runtime::SandboxInfoJson(*info);
  j["created_at"] = info->record.created_at;
  j["cgroup"] = info->record.cgroup_name;
  j["limits"] = spec["limits"];  // all of them, not only those ps and stats show
  j["mounts"] = spec["mounts"];
  j["spec"] = spec;
  std::cout << j.dump(2) << std::endl;
  return 0;
}

int Logs(const std::string& sandbox, bool follow) {
  auto info = runtime::InspectSandbox(sandbox);
  if (!info) return ReportRefusal(info.error());
  // There is nothing to show: the sandbox's PID 1 is corral-init, and each exec's output
  // went to the corral that ran it.
  const std::string& name = info->record.name;
  return ReportRefusal(
      Error(ErrorCode::kInvalidArgument,
            "logs: sandbox " + name +
                " has no main process of its own (its PID 1 is corral-init), so there "
                "is no output to show; an exec's output goes to the corral that ran "
                "it. Send a command's output to a file and read that: corral exec " +
                name + " -- bash -c 'nohup CMD >/tmp/out.log 2>&1 &', then corral exec " + name +
                (follow ? " -- tail -f /tmp/out.log" : " -- cat /tmp/out.log")));
}

}  // namespace

void AddSandboxInfoCommands(CLI::App& app, int* exit_code) {
  auto ps_json = std::make_shared<bool>(false);
  auto ps_all = std::make_shared<bool>(false);
  CLI::App* ps = app.add_subcommand("ps", "list persistent sandboxes");
  ps->add_flag("--json", *ps_json, "JSON array");
  ps->add_flag("-a,--all", *ps_all, "accepted for docker's sake: ps lists dead sandboxes too");
  // ps_all is kept alive by the callback: CLI11 writes the flag at parse time.
  ps->callback([ps_json, ps_all, exit_code] { *exit_code = Ps(*ps_json); });

  auto stats_name = std::make_shared<std::string>();
  auto stats_json = std::make_shared<bool>(false);
  CLI::App* stats = app.add_subcommand("stats", "memory, cpu and pids of a sandbox");
  stats->add_option("sandbox", *stats_name, "name or id")->required();
  stats->add_flag("--json", *stats_json, "JSON object");
  stats->callback(
      [stats_name, stats_json, exit_code] { *exit_code = Stats(*stats_name, *stats_json); });

  auto inspect_name = std::make_shared<std::string>();
  CLI::App* inspect =
      app.add_subcommand("inspect", "a sandbox's state, limits, mounts and spec as JSON");
  inspect->add_option("sandbox", *inspect_name, "name or id")->required();
  inspect->callback([inspect_name, exit_code] { *exit_code = Inspect(*inspect_name); });

  auto logs_name = std::make_shared<std::string>();
  auto logs_follow = std::make_shared<bool>(false);
  CLI::App* logs = app.add_subcommand("logs",
                                      "says where a sandbox's output goes (it has no "
                                      "main process whose output could be kept)");
  logs->add_option("sandbox", *logs_name, "name or id")->required();
  logs->add_flag("-f,--follow", *logs_follow, "(the hint then uses tail -f)");
  logs->callback(
      [logs_name, logs_follow, exit_code] { *exit_code = Logs(*logs_name, *logs_follow); });
}

}  // namespace corral::cli
