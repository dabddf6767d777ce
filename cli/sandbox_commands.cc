// Persistent sandboxes: `corral create`, `exec`, `ps`, `stats`, `rm`, `reap`.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/jail_flags.h"
#include "cli/outcome_report.h"
#include "runtime/spec/config.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/pool/pool_or_cold.h"
#include "runtime/spec/sizes.h"

namespace corral::cli {

namespace {

int Fail(const Error& e) {
  std::fprintf(stderr, "corral: %s\n", e.message().c_str());
  return 125;
}

std::string Duration(double seconds) {
  char buf[32];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.0fs", seconds);
  } else if (seconds < 7200) {
    std::snprintf(buf, sizeof buf, "%.0fm", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fh", seconds / 3600);
  }
  return buf;
}

nlohmann::json OptionalJson(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json InfoJson(const runtime::SandboxInfo& info) {
  nlohmann::json j = {{"name", info.record.name},
                      {"id", info.record.id},
                      {"state", info.alive ? "running" : "dead"},
                      {"init_pid", info.record.init_pid},
                      {"age_seconds", info.age_seconds},
                      {"idle_seconds", info.idle_seconds},
                      {"idle_timeout_seconds", info.record.idle_timeout_seconds},
                      {"processes", info.processes}};
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
  return j;
}

std::string MemoryText(const runtime::SandboxInfo& info) {
  if (!info.stats || !info.stats->memory_current_bytes) return "-";
  return runtime::FormatSize(*info.stats->memory_current_bytes);
}

struct CreateFlags {
  JailFlags jail;
  std::vector<std::string> command;  // refused: see Create
  std::string name;
  double idle_timeout = 0;
};

int Create(const CreateFlags& f) {
  // A sandbox's PID 1 is corral-init; a command given here would silently go nowhere.
  if (auto command = CommandWithTrailing(f.command); !command.empty()) {
    std::string text;
    for (const auto& a : command) text += (text.empty() ? "" : " ") + a;
    return Fail(Error(ErrorCode::kInvalidArgument,
                      "create: a command was given (" + text +
                          "), but a sandbox runs none of its own; nothing was created. Create "
                          "it, then start the command with exec, in the background if it "
                          "should keep running: corral exec NAME -- bash -c 'nohup " +
                          text + " >/tmp/out.log 2>&1 &'"));
  }
  runtime::CreateRequest request;
  if (!BuildSpec(f.jail, &request.spec)) return 125;
  request.name = f.name;
  request.idle_timeout_seconds = f.idle_timeout;
  auto record = runtime::CreateSandbox(request);
  if (!record) return Fail(record.error());
  std::printf("%s\n", record->name.c_str());
  return 0;
}

struct ExecFlags {
  std::string sandbox;
  std::vector<std::string> command, env;
  std::optional<std::string> workdir;
  std::optional<double> timeout;
  bool json = false;
  bool stdin_passthrough = false;
  std::string pool = "auto";
};

int Exec(const ExecFlags& f) {
  if (CommandWithTrailing(f.command).empty()) {
    return Fail(Error(ErrorCode::kInvalidArgument,
                      "exec: no command given (corral exec NAME -- CMD [ARGS...])"));
  }
  runtime::ExecRequest request;
  request.sandbox = f.sandbox;
  request.argv = CommandWithTrailing(f.command);
  for (const auto& e : f.env) {
    auto kv = runtime::ParseEnvFlag(e);
    if (!kv) return Fail(kv.error().WithContext("--env " + e));
    request.env.push_back(*kv);
  }
  request.workdir = f.workdir;
  request.timeout_seconds = f.timeout;
  request.io.capture_output = f.json;
  request.io.pass_stdin = f.stdin_passthrough;
  auto outcome = runtime::ExecPooledOrDirect(f.pool, request);
  if (!outcome) {
    if (f.json) std::cout << runtime::ErrorToJson(outcome.error()) << std::endl;
    return Fail(outcome.error());
  }
  // The report names the limit that fired with its value: the sandbox's own (an exec
  // inherits its timeout unless it sets one). Read only when a limit fired.
  runtime::LimitsSpec limits;
  if (outcome->status == runtime::RunStatus::kTimedOut ||
      outcome->status == runtime::RunStatus::kOomKilled) {
    if (auto info = runtime::InspectSandbox(f.sandbox)) limits = info->record.spec.limits;
  }
  if (f.timeout) limits.timeout_seconds = *f.timeout;
  return ReportOutcome(*outcome, limits, f.json);
}

int Ps(bool json) {
  auto list = runtime::ListSandboxes();
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& info : list) j.push_back(InfoJson(info));
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::printf("%-24s %-12s %-8s %6s %6s %6s %10s\n", "NAME", "ID", "STATE", "AGE", "IDLE", "PROCS",
              "MEMORY");
  for (const auto& info : list) {
    std::printf("%-24s %-12s %-8s %6s %6s %6zu %10s\n", info.record.name.c_str(),
                info.record.id.c_str(), info.alive ? "running" : "dead",
                Duration(info.age_seconds).c_str(), Duration(info.idle_seconds).c_str(),
                info.processes, MemoryText(info).c_str());
  }
  return 0;
}

int Stats(const std::string& sandbox, bool json) {
  auto info = runtime::InspectSandbox(sandbox);
  if (!info) return Fail(info.error());
  nlohmann::json j = InfoJson(*info);
  if (json) {
    std::cout << j.dump() << std::endl;
    return 0;
  }
  for (const auto& [key, value] : j.items()) {
    std::printf("%-22s %s\n", key.c_str(),
                value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
  }
  return 0;
}

int Rm(const std::vector<std::string>& names, bool all) {
  std::vector<std::string> targets = names;
  if (all) {
    for (const auto& info : runtime::ListSandboxes()) targets.push_back(info.record.name);
  }
  int rc = 0;
  for (const auto& name : targets) {
    if (auto st = runtime::RemoveSandbox(name); !st) {
      rc = Fail(st.error());
    } else {
      std::printf("%s\n", name.c_str());
    }
  }
  return rc;
}

}  // namespace

void AddSandboxCommands(CLI::App& app, int* exit_code) {
  auto create_flags = std::make_shared<CreateFlags>();
  CLI::App* create = app.add_subcommand("create", "create a persistent sandbox, print its name");
  AddJailFlags(create, &create_flags->jail);
  create->add_option("--name", create_flags->name, "[A-Za-z0-9_-]{1,64}; default: a random id");
  create->add_option("command", create_flags->command, "refused, with a hint (see exec)");
  create->add_option("--idle-timeout", create_flags->idle_timeout,
                     "remove after this many seconds without an exec (0 = never)");
  create->callback([create, create_flags, exit_code] {
    if (create->count("--name") > 0 && create_flags->name.empty()) {
      *exit_code = Fail(Error(ErrorCode::kInvalidArgument, "--name: must not be empty"));
      return;
    }
    *exit_code = Create(*create_flags);
  });

  auto exec_flags = std::make_shared<ExecFlags>();
  CLI::App* exec = app.add_subcommand("exec", "run a command in a persistent sandbox");
  exec->add_option("sandbox", exec_flags->sandbox, "name or id")->required();
  exec->add_option("-e,--env", exec_flags->env, "K=V for this exec only");
  exec->add_option("-w,--workdir", exec_flags->workdir, "working directory");
  exec->add_option("--timeout", exec_flags->timeout, "wall-clock limit of this exec, seconds");
  exec->add_flag("--json", exec_flags->json, "capture output and print one JSON outcome");
  exec->add_flag("-i,--stdin", exec_flags->stdin_passthrough, "pass stdin through");
  exec->add_option("--pool", exec_flags->pool,
                   "auto (a `corral pool`'s exec slot, if one is ready) | off | SOCKET");
  exec->add_option("command", exec_flags->command, "the command (after --)");
  exec->callback([exec_flags, exit_code] { *exit_code = Exec(*exec_flags); });

  auto ps_json = std::make_shared<bool>(false);
  CLI::App* ps = app.add_subcommand("ps", "list persistent sandboxes");
  ps->add_flag("--json", *ps_json, "JSON array");
  ps->callback([ps_json, exit_code] { *exit_code = Ps(*ps_json); });

  auto stats_name = std::make_shared<std::string>();
  auto stats_json = std::make_shared<bool>(false);
  CLI::App* stats = app.add_subcommand("stats", "memory, cpu and pids of a sandbox");
  stats->add_option("sandbox", *stats_name, "name or id")->required();
  stats->add_flag("--json", *stats_json, "JSON object");
  stats->callback(
      [stats_name, stats_json, exit_code] { *exit_code = Stats(*stats_name, *stats_json); });

  auto rm_names = std::make_shared<std::vector<std::string>>();
  auto rm_all = std::make_shared<bool>(false);
  CLI::App* rm = app.add_subcommand("rm", "kill everything in a sandbox and remove it");
  rm->add_option("sandbox", *rm_names, "names or ids");
  rm->add_flag("--all", *rm_all, "remove every sandbox");
  rm->callback([rm_names, rm_all, exit_code] { *exit_code = Rm(*rm_names, *rm_all); });

  CLI::App* reap = app.add_subcommand("reap", "remove sandboxes past their idle timeout");
  reap->callback([exit_code] {
    for (const auto& name : runtime::ReapIdleSandboxes()) std::printf("%s\n", name.c_str());
    *exit_code = 0;
  });
}

}  // namespace corral::cli
