// `corral run [OPTIONS] -- CMD [ARGS...]`: flags -> JailSpec -> a pool server's jail
// (runtime/pool/pool_or_cold.h) or runtime::RunJail; with mode container,
// runtime::oci::RunContainer.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/docker_habits.h"
#include "cli/jail_flags.h"
#include "cli/outcome_report.h"
#include "runtime/oci/container_run.h"
#include "runtime/pool/pool_or_cold.h"
#include "runtime/run/supervisor.h"
#include "runtime/volumes/volume_attach.h"

namespace corral::cli {

namespace {

struct RunFlags {
  JailFlags jail;
  bool json = false;
  bool stdin_passthrough = false;
  bool tty = false;
  std::string pool = "auto";
  bool rm = false;  // docker's --rm: what a run always does
};

int Run(const RunFlags& flags, CLI::App* run) {
  runtime::JailSpec spec;
  FlagNames names;
  if (!BuildSpec(flags.jail, &spec, &names)) return InvalidSpecExit(flags.json);
  auto command = CommandOf(run);
  if (!command) return ReportRefusal(command.error(), flags.json);
  spec.argv = std::move(*command);
  if (spec.argv.empty()) {
    std::fprintf(stderr, "corral: run: no command given (corral run [OPTIONS] -- CMD [ARGS...])\n");
    return 125;
  }
  if (flags.tty && flags.json) {
    return ReportRefusal(Error(ErrorCode::kInvalidArgument,
                               "-t and --json: a terminal's output is not captured; choose one"),
                         flags.json);
  }
  // Held until the run ends: its volumes counted as in use (runtime/volumes/volume_attach.h).
  auto volumes = runtime::AttachVolumes(&spec, "", /*create_missing=*/true);
  if (!volumes) return ReportRefusal(NameFlags(volumes.error(), names), flags.json);
  runtime::RunOptions options;
  options.capture_output = flags.json;
  options.pass_stdin = flags.stdin_passthrough;
  options.tty = flags.tty;
  // mode container: the OCI runtime's own start, never a pool's prepared jail.
  auto outcome = spec.mode == runtime::RunMode::kContainer
                     ? runtime::oci::RunContainer(spec, options)
                     : runtime::RunPooledOrCold(flags.pool, spec, options);
  if (!outcome) return ReportRefusal(NameFlags(outcome.error(), names), flags.json);
  const int exit_code = ReportOutcome(*outcome, spec.limits, flags.json);
  if (exit_code == 127) {  // `corral run ubuntu:22.04 bash`, as a Docker user types it
    if (std::string hint = ImageLikeCommandHint(spec.argv[0]); !hint.empty()) {
      std::fprintf(stderr, "corral: %s\n", hint.c_str());
    }
  }
  return exit_code;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  CLI::App* run = app.add_subcommand("run", "run one command in a fresh jail");
  auto flags = std::make_shared<RunFlags>();
  AddJailFlags(run, &flags->jail);
  run->add_flag("--json", flags->json, "capture output and print one JSON outcome object");
  run->add_flag("-i,--stdin", flags->stdin_passthrough, "pass stdin through (default /dev/null)");
  run->add_flag("-t,--tty", flags->tty,
                "give the command a terminal (a pty of the jail's own); -it: interactive");
  run->add_option("--pool", flags->pool,
                  "auto (a `corral pool` at the default socket, if one runs) | off | SOCKET");
  run->add_flag("--rm", flags->rm, "accepted for docker's sake: a run's jail is always removed");
  AddDockerDefaultFlags(run, &flags->jail);
  // The first word that is no option starts the command (`corral run ls -la /`); a
  // command whose own options come first still needs `--`.
  run->prefix_command();
  run->footer("The command: after --, or from the first word that is no option of run's.");
  run->callback([run, flags, exit_code] { *exit_code = Run(*flags, run); });
}

}  // namespace corral::cli
