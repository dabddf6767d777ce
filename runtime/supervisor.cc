#include "runtime/supervisor.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cerrno>

#include "jail/spawn.h"
#include "runtime/config.h"
#include "runtime/jail_cgroup.h"
#include "runtime/phase_trace.h"
#include "runtime/planner.h"
#include "runtime/watch.h"

namespace corral::runtime {

namespace {

// Clones the jail into the cgroup: directly (clone3 CLONE_INTO_CGROUP) where the driver
// allows, so that not one instruction runs outside it; else the child joins it itself
// before doing anything else.
Result<jail::JailProcess> SpawnJail(const jail::JailPlan& plan, const Stdio& io,
                                    cgroups::Cgroup* cgroup) {
  jail::SpawnRequest request;
  request.plan = &plan;
  request.stdin_fd = io.child_stdin();
  request.stdout_fd = io.child_stdout();
  request.stderr_fd = io.child_stderr();
  if (cgroup != nullptr) {
    request.cgroup_fd = cgroup->clone_into_fd();
    if (request.cgroup_fd < 0) request.cgroup_attach_fds = cgroup->attach_fds();
  }
  auto spawned = jail::Spawn(request);
  if (!spawned && request.cgroup_fd >= 0 && spawned.error().sys_errno() == ENOSYS) {
    request.cgroup_fd = -1;  // kernel without clone3
    request.cgroup_attach_fds = cgroup->attach_fds();
    spawned = jail::Spawn(request);
  }
  return spawned;
}

}  // namespace

Result<RunOutcome> RunJail(const JailSpec& spec, const RunOptions& options) {
  PhaseTrace trace;
  RETURN_IF_ERROR(ValidateSpec(spec));
  trace.Mark("validate");
  Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(JailCgroup cg, CreateJailCgroup(spec));
  trace.Mark("cgroup");
  RETURN_IF_ERROR(PrepareHostDirs(spec));
  ASSIGN_OR_RETURN(jail::JailPlan plan, Plan(spec));
  trace.Mark("plan");
  ASSIGN_OR_RETURN(Stdio io, MakeStdio(options));

  RunOutcome outcome;
  outcome.warnings = WeakenedIsolation(spec);
  for (auto& w : cg.warnings) outcome.warnings.push_back(std::move(w));
  outcome.captured = options.capture_output;
  SignalGuard signals;
  ASSIGN_OR_RETURN(jail::JailProcess process, SpawnJail(plan, io, cg.cgroup.get()));
  io.CloseChildEnds();
  trace.Mark("clone");

  OutputCapture out(spec.limits.output_limit_bytes);
  OutputCapture err(spec.limits.output_limit_bytes);
  Watch watch =
      NewWatch(&process, cg.cgroup.get(), &io, &out, &err, signals.fd(), spec.limits, start);

  int setup_timeout_ms =
      spec.limits.timeout_seconds > 0 ? static_cast<int>(spec.limits.timeout_seconds * 1000) : -1;
  auto setup = process.AwaitSetup(setup_timeout_ms);
  if (!setup) {
    KillNow(watch);
    return setup.error();
  }
  if (setup->has_value()) {
    outcome.status = RunStatus::kSetupFailed;
    outcome.setup_error = std::move(**setup);
    KillNow(watch);
  }
  trace.Mark("setup+exec");
  WaitForExit(watch);
  rusage usage{};
  auto init_status = process.Reap(&usage);
  trace.Mark("command+exit");
  // The init reports the command's own status; without a report (the init was killed:
  // OOM, timeout, our SIGKILL) its own status is what we have.
  std::optional<jail::InitReport> report = process.TakeReport();
  int wait_status = report ? report->wait_status : (init_status ? *init_status : 0);
  cgroups::Stats stats;
  if (cg.cgroup) {
    (void)cg.cgroup->KillAll();  // without a PID namespace stragglers may remain
    if (auto s = cg.cgroup->ReadStats()) stats = *s;
  }
  DrainToEof(watch);
  outcome.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  FillOutcome(spec.limits, wait_status, watch, stats, usage, &outcome);
  if (cg.cgroup) {
    if (auto st = cg.cgroup->Destroy(); !st) spdlog::warn("{}", st.error().message());
  }
  trace.Mark("teardown");
  return outcome;
}

}  // namespace corral::runtime
