// Persistent sandboxes: `corral create`, `exec`, `rm`, `reap` (ps, stats, inspect and logs:
// sandbox_info_commands.cc).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/jail_flags.h"
#include "cli/outcome_report.h"
#include "runtime/pool/pool_or_cold.h"
#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/remove_many.h"
#include "runtime/spec/config.h"
#include "runtime/volumes/volume_attach.h"

namespace corral::cli {

namespace {

struct CreateFlags {
  JailFlags jail;
  std::string name;
  double idle_timeout = 0;
  std::string from;  // a snapshot's tag
};

int Create(const CreateFlags& f, CLI::App* create) {
  auto command = CommandOf(create);
  if (!command) return ReportRefusal(command.error());
  // A sandbox's PID 1 is corral-init; a command given here would silently go nowhere.
  if (!command->empty()) {
    std::string text;
    for (const auto& a : *command) text += (text.empty() ? "" : " ") + a;
    return ReportRefusal(
        Error(ErrorCode::kInvalidArgument,
              "create: a command was given (" + text +
                  "), but a sandbox runs none of its own; nothing was created. Create "
                  "it, then start the command with exec, in the background if it "
                  "should keep running: corral exec NAME -- bash -c 'nohup " +
                  text + " >/tmp/out.log 2>&1 &'"));
  }
  runtime::CreateRequest request;
  FlagNames names;
  if (!BuildSpec(f.jail, &request.spec, &names)) return 125;
  request.name = f.name;
  request.idle_timeout_seconds = f.idle_timeout;
  request.from_snapshot = f.from;
  // --volume NAME:/path of a volume that does not exist makes it, as docker does.
  auto record = runtime::CreateSandboxWithVolumes(request, /*create_missing=*/true);
  if (!record) return ReportRefusal(NameFlags(record.error(), names));
  std::printf("%s\n", record->name.c_str());
  return 0;
}

struct ExecFlags {
  std::string sandbox;
  std::vector<std::string> env;
  std::optional<std::string> workdir;
  std::optional<double> timeout;
  bool json = false;
  bool stdin_passthrough = false;
  bool tty = false;
  std::string pool = "auto";
};

int Exec(const ExecFlags& f, CLI::App* exec) {
  auto command = CommandOf(exec);
  if (!command) return ReportRefusal(command.error());
  if (command->empty()) {
    return ReportRefusal(Error(ErrorCode::kInvalidArgument,
                               "exec: no command given (corral exec NAME -- CMD [ARGS...])"));
  }
  runtime::ExecRequest request;
  request.sandbox = f.sandbox;
  request.argv = std::move(*command);
  for (const auto& e : f.env) {
    auto kv = ParseEnvOption(e);
    if (!kv) return ReportRefusal(kv.error().WithContext(FlagAsGiven({"-e", "--env"}, e)));
    if (*kv) request.env.push_back(**kv);
  }
  FlagNames names;
  if (f.workdir) names.by_key.emplace_back("workdir", FlagAsGiven({"-w", "--workdir"}, *f.workdir));
  if (f.timeout) names.by_key.emplace_back("limits.timeout", "--timeout");
  request.workdir = f.workdir;
  request.timeout_seconds = f.timeout;
  if (f.tty && f.json) {
    return ReportRefusal(Error(ErrorCode::kInvalidArgument,
                               "-t and --json: a terminal's output is not captured; choose one"));
  }
  request.io.capture_output = f.json;
  request.io.pass_stdin = f.stdin_passthrough;
  request.io.tty = f.tty;
  auto outcome = runtime::ExecPooledOrDirect(f.pool, request);
  if (!outcome) {
    Error e = NameFlags(outcome.error(), names);
    if (f.json) std::cout << runtime::ErrorToJson(e) << std::endl;
    return ReportRefusal(e);
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

struct RmFlags {
  std::vector<std::string> names;
  bool all = false;
  bool force = false;  // a name with no sandbox is no error (rm -f)
};

int Rm(const RmFlags& f) {
  if (f.names.empty() && !f.all) {
    return ReportRefusal(Error(ErrorCode::kInvalidArgument,
                               "rm: no sandbox named (corral rm NAME... or corral rm --all)"));
  }
  std::vector<std::string> targets = f.names;
  if (f.all) {
    for (const auto& info : runtime::ListSandboxes()) targets.push_back(info.record.name);
  }
  // Side by side (each removal mostly waits on the kernel); reported in the order given.
  const std::vector<Status> results = runtime::RemoveSandboxes(targets);
  int rc = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (const Status& st = results[i]; !st) {
      if (f.force && st.error().code() == ErrorCode::kNotFound) continue;
      rc = ReportRefusal(st.error());
    } else {
      std::printf("%s\n", targets[i].c_str());
    }
  }
  return rc;
}

// `corral pause/resume NAME...` (runtime/sandboxes/pause.h), as `docker pause/unpause`:
// each name printed once done, every failure said.
int PauseOrResume(const std::vector<std::string>& names, bool pause) {
  int rc = 0;
  for (const std::string& name : names) {
    Status st = pause ? runtime::PauseSandbox(name) : runtime::ResumeSandbox(name);
    if (!st) {
      rc = ReportRefusal(st.error());
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
  AddDockerDefaultFlags(create, &create_flags->jail);
  create->add_option("--name", create_flags->name, "[A-Za-z0-9_-]{1,64}; default: a random id");
  create->prefix_command();  // a command given is refused, with a hint (see exec)
  create->add_option("--idle-timeout", create_flags->idle_timeout,
                     "remove after this many seconds without an exec (0 = never)");
  create->add_option("--from", create_flags->from,
                     "a snapshot's tag: the workspace starts as it was (corral snapshot ls)");
  create->callback([create, create_flags, exit_code] {
    if (create->count("--name") > 0 && create_flags->name.empty()) {
      *exit_code = ReportRefusal(Error(ErrorCode::kInvalidArgument, "--name: must not be empty"));
      return;
    }
    *exit_code = Create(*create_flags, create);
  });

  auto exec_flags = std::make_shared<ExecFlags>();
  CLI::App* exec = app.add_subcommand("exec", "run a command in a persistent sandbox");
  exec->add_option("sandbox", exec_flags->sandbox, "name or id")->required();
  exec->add_option("-e,--env", exec_flags->env, "K=V for this exec only (K alone: the caller's)")
      ->allow_extra_args(false);
  exec->add_option("-w,--workdir", exec_flags->workdir, "working directory");
  exec->add_option("--timeout", exec_flags->timeout, "wall-clock limit of this exec, seconds");
  exec->add_flag("--json", exec_flags->json, "capture output and print one JSON outcome");
  exec->add_flag("-i,--stdin", exec_flags->stdin_passthrough, "pass stdin through");
  exec->add_flag("-t,--tty", exec_flags->tty,
                 "give the command a terminal (a pty of the sandbox's own); -it: interactive");
  exec->add_option("--pool", exec_flags->pool,
                   "auto (a `corral pool`'s exec slot, if one is ready) | off | SOCKET");
  // After NAME, the first word that is no option starts the command (as for run).
  exec->prefix_command();
  exec->callback([exec, exec_flags, exit_code] { *exit_code = Exec(*exec_flags, exec); });

  AddSandboxInfoCommands(app, exit_code);

  auto rm_flags = std::make_shared<RmFlags>();
  CLI::App* rm = app.add_subcommand("rm", "kill everything in a sandbox and remove it");
  rm->add_option("sandbox", rm_flags->names, "names or ids");
  rm->add_flag("--all", rm_flags->all, "remove every sandbox");
  rm->add_flag("-f,--force", rm_flags->force,
               "a name with no sandbox is no error (rm always kills what runs inside)");
  rm->callback([rm_flags, exit_code] { *exit_code = Rm(*rm_flags); });

  auto pause_names = std::make_shared<std::vector<std::string>>();
  CLI::App* pause = app.add_subcommand(
      "pause", "freeze every process of a sandbox (memory, files and sockets kept; no CPU used)");
  pause->add_option("sandbox", *pause_names, "names or ids")->required();
  pause->callback(
      [pause_names, exit_code] { *exit_code = PauseOrResume(*pause_names, /*pause=*/true); });
  auto resume_names = std::make_shared<std::vector<std::string>>();
  CLI::App* resume = app.add_subcommand("resume", "thaw a paused sandbox");
  resume->add_option("sandbox", *resume_names, "names or ids")->required();
  resume->callback(
      [resume_names, exit_code] { *exit_code = PauseOrResume(*resume_names, /*pause=*/false); });

  CLI::App* reap = app.add_subcommand("reap", "remove sandboxes past their idle timeout");
  reap->callback([exit_code] {
    for (const auto& name : runtime::ReapIdleSandboxes()) std::printf("%s\n", name.c_str());
    *exit_code = 0;
  });
}

}  // namespace corral::cli
