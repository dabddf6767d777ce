#include "runtime/run/supervisor.h"

#include <fcntl.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <optional>

#include "jail/command.h"
#include "jail/spawn.h"
#include "runtime/net/netproxy_launch.h"
#include "runtime/run/identity.h"
#include "runtime/run/jail_cgroup.h"
#include "runtime/run/jail_spawner.h"
#include "runtime/run/landlock_plan.h"
#include "runtime/run/phase_trace.h"
#include "runtime/run/planner.h"
#include "runtime/run/pty.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/run/user_ns_plan.h"
#include "runtime/run/watch.h"
#include "runtime/spec/config.h"

namespace corral::runtime {

CgroupFds FdsOf(const cgroups::Cgroup* cgroup) {
  CgroupFds fds;
  if (cgroup != nullptr) {
    fds.clone_into = cgroup->clone_into_fd();
    fds.attach = cgroup->attach_fds();
  }
  return fds;
}

namespace {

// Clones the jail into the cgroup: directly (clone3 CLONE_INTO_CGROUP) where the driver
// allows, so that not one instruction runs outside it; else the child joins it itself
// before doing anything else.
Result<jail::JailProcess> SpawnJail(const jail::JailPlan& plan, int stdin_fd, int stdout_fd,
                                    int stderr_fd, const CgroupFds& cgroup,
                                    bool clone_parent = false) {
  jail::SpawnRequest request;
  request.plan = &plan;
  request.stdin_fd = stdin_fd;
  request.stdout_fd = stdout_fd;
  request.stderr_fd = stderr_fd;
  request.clone_parent = clone_parent;
  request.cgroup_fd = cgroup.clone_into;
  if (request.cgroup_fd < 0) request.cgroup_attach_fds = cgroup.attach;
  auto spawned = jail::Spawn(request);
  if (!spawned && request.cgroup_fd >= 0 && spawned.error().sys_errno() == ENOSYS) {
    request.cgroup_fd = -1;  // kernel without clone3
    request.cgroup_attach_fds = cgroup.attach;
    spawned = jail::Spawn(request);
  }
  return spawned;
}

// Whether the outcome goes out at the init's report (RunOptions::on_outcome), before the
// teardown: it needs a PID namespace (killing the init ends everything in the jail) and a
// cgroup (the figures).
bool EarlyOutcome(const JailSpec& spec, const JailCgroup& cg, const RunOptions& options) {
  return options.on_outcome && spec.namespaces.pid && cg.cgroup != nullptr;
}

// How long the setup channel may stay open after the init reported or exited.
constexpr int kSetupChannelGraceMs = 2000;

// The end of a run whose command has exited while its init still runs (the init's report
// came first). SIGKILL to the init takes the whole PID namespace down (nothing in it can
// leave it: joining another needs capabilities no jail process has, so the cgroup-wide
// kill can wait for the teardown); output is drained to EOF and the figures read, so the
// outcome can be delivered before the namespaces' and the cgroup's teardown.
// When the cgroup holds nothing but the init (a pooled jail's init waits for the kill
// after its report, jail/command.h), nothing is left that could still write to the
// command's stdio or change the figures, so the kill waits until after the answer: it
// wakes the init, whose exit would otherwise take this CPU before the answer goes out.
// Returns whether the init still has to be killed.
bool EndEarly(jail::JailProcess& process, JailCgroup& cg, Watch& watch, int wait_status,
              const LimitsSpec& limits, Clock::time_point start, RunOutcome* outcome) {
  cgroups::Stats stats;
  if (auto s = cg.cgroup->ReadStats()) stats = *s;
  bool only_init_left = stats.pids_current && *stats.pids_current <= 1;
  if (!only_init_left) process.Kill(SIGKILL);
  DrainToEof(watch);
  outcome->wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  FillOutcome(limits, wait_status, watch, stats, rusage{}, outcome);
  return only_init_left;
}

// From a spawned jail to its outcome: wait with the deadline while draining output, kill
// the tree, collect the figures, remove the cgroup. `io`'s child ends are already closed.
// With an on_outcome callback (and a jail it can be early for, see RunOptions), the
// outcome is delivered at the init's report and the teardown follows.
Result<RunOutcome> Supervise(jail::JailProcess& process, JailCgroup& cg, Stdio& io,
                             const JailSpec& spec, const RunOptions& options,
                             const StopSources& stops, Clock::time_point start, RunOutcome outcome,
                             PhaseTrace& trace, net::NetworkService* network = nullptr) {
  const LimitsSpec& limits = spec.limits;
  // The command is over: its proxy's summary (what it reached, what was refused) belongs
  // to the outcome.
  auto finish_network = [&] {
    if (network != nullptr) outcome.network_json = network->Finish();
  };
  OutputCapture out(limits.output_limit_bytes);
  OutputCapture err(limits.output_limit_bytes);
  Watch watch = NewWatch(&process, cg.cgroup.get(), &io, &out, &err, stops, limits, start);

  bool early = EarlyOutcome(spec, cg, options);
  if (early) watch.report_fd = process.status_fd();
  // One wait for the command's setup, exec and run: the setup channel is read after it
  // (one wake-up less on the path of every run).
  WaitForExit(watch);
  // The init reports the command's own status; without a report (the init was killed:
  // OOM, timeout, our SIGKILL) its own status is what we have.
  std::optional<jail::InitReport> report = process.TakeReport();
  if (early && !report) {  // the init closed the channel without a report: it is exiting
    watch.report_fd = -1;
    WaitForExit(watch);
    report = process.TakeReport();
  }
  trace.Mark("command");
  // The command has exec'd or died and the init is past its own hardening (it reports
  // only after that, or is gone): the channel holds a failure or is at EOF, or will be as
  // soon as a killed child finishes dying.
  auto setup = process.AwaitSetup(kSetupChannelGraceMs);
  if (!setup) {
    spdlog::warn("setup channel: {}", setup.error().message());
  } else if (setup->has_value()) {
    outcome.status = RunStatus::kSetupFailed;
    outcome.setup_error = std::move(**setup);
  }
  if (early && report) {
    bool kill_after = EndEarly(process, cg, watch, report->wait_status, limits, start, &outcome);
    trace.Mark("stats+drain");
    finish_network();
    options.on_outcome(outcome);
    trace.Mark("answer");
    if (kill_after) process.Kill(SIGKILL);
    rusage usage{};
    (void)process.Reap(&usage);
    if (auto st = cg.cgroup->Destroy(); !st) spdlog::warn("{}", st.error().message());
    trace.Mark("teardown");
    return outcome;
  }
  rusage usage{};
  auto init_status = process.Reap(&usage);
  trace.Mark("exit");
  if (!report) report = process.TakeReport();
  int wait_status = report ? report->wait_status : (init_status ? *init_status : 0);
  cgroups::Stats stats;
  if (cg.cgroup) {
    (void)cg.cgroup->KillAll();  // without a PID namespace stragglers may remain
    if (auto s = cg.cgroup->ReadStats()) stats = *s;
  }
  DrainToEof(watch);
  outcome.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  FillOutcome(limits, wait_status, watch, stats, usage, &outcome);
  if (cg.cgroup) {
    if (auto st = cg.cgroup->Destroy(); !st) spdlog::warn("{}", st.error().message());
  }
  finish_network();
  trace.Mark("teardown");
  if (options.on_outcome) options.on_outcome(outcome);
  return outcome;
}

// The proxy of a one-shot run in network.mode allowlist, on a namespace of its own that
// the jail joins. Its name in the decision log and its summary file are `kind` ("run", or
// "pool" for a pooled jail's), this process and a counter (a daemon or a pool server
// runs many at once).
Result<net::NetworkService> StartRunNetwork(const JailSpec& spec, const char* kind) {
  static std::atomic<uint64_t> counter{0};
  net::LaunchOptions launch;
  launch.runtime_dir = RuntimeDir();
  if (::mkdir(launch.runtime_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "mkdir " + launch.runtime_dir);
  }
  launch.sandbox =
      std::string(kind) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  launch.summary_path = launch.runtime_dir + "/" + launch.sandbox + ".network.json";
  return net::NetworkService::StartInNewNamespace(spec, launch);
}

RunOutcome NewOutcome(const JailSpec& spec, const JailCgroup& cg, const RunOptions& options) {
  RunOutcome outcome;
  outcome.warnings = WeakenedIsolation(spec, /*limits_said=*/!cg.warnings.empty());
  AddMountHints(spec, &outcome);
  for (const auto& w : cg.warnings) outcome.warnings.push_back(w);
  outcome.captured = options.capture_output;
  outcome.identity = IdentityOutcomeFor(spec);
  return outcome;
}

}  // namespace

Result<RunOutcome> RunJail(const JailSpec& spec, const RunOptions& options) {
  PhaseTrace trace;
  RETURN_IF_ERROR(ValidateSpec(spec));
  RETURN_IF_ERROR(RequireProcessMode(spec, "this run (corral's own jail)"));
  trace.Mark("validate");
  Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(JailCgroup cg, CreateJailCgroup(spec));
  trace.Mark("cgroup");
  RETURN_IF_ERROR(PrepareHostDirs(spec));
  ASSIGN_OR_RETURN(jail::JailPlan plan, Plan(spec));
  if (!cg.cgroup) AddPidsRlimitFallback(spec, &plan);
  plan.allocate_tty = options.tty;
  trace.Mark("plan");
  std::optional<net::NetworkService> network;
  if (spec.network.mode == NetworkMode::kAllowlist) {
    ASSIGN_OR_RETURN(network, StartRunNetwork(spec, "run"));
    plan.net_ns_fd = network->netns_fd();
    plan.clone_flags &= ~static_cast<unsigned long>(CLONE_NEWNET);
    trace.Mark("network");
  }
  ASSIGN_OR_RETURN(Stdio io, MakeStdio(options));

  RunOutcome outcome = NewOutcome(spec, cg, options);
  outcome.landlock = LandlockOutcomeOf(plan.landlock);
  StopSources stops(options);
  ASSIGN_OR_RETURN(jail::JailProcess process, SpawnJail(plan, io.child_stdin(), io.child_stdout(),
                                                        io.child_stderr(), FdsOf(cg.cgroup.get())));
  io.CloseChildEnds();
  trace.Mark("clone");
  if (options.tty) RETURN_IF_ERROR(AcceptTerminal(io, process.pidfd(), options.pass_stdin));
  return Supervise(process, cg, io, spec, options, stops, start, std::move(outcome), trace,
                   network ? &*network : nullptr);
}

Result<JailBlueprint> MakeBlueprint(const JailSpec& spec) {
  RETURN_IF_ERROR(RequireProcessMode(spec, "pooled jails"));
  RETURN_IF_ERROR(ValidateSpec(spec));
  if (spec.network.mode == NetworkMode::kAllowlist) {
    // Refused now rather than at every jail the pool would try to prepare: the proxy's
    // program must be there, and the planner refuses a rootless jail (Plan).
    RETURN_IF_ERROR(net::FindNetproxyProgram());
    if (RunsRootless(spec)) {
      return Error(ErrorCode::kUnsupported,
                   "network.mode allowlist needs root (its proxy's network namespace is made "
                   "by root); rootless jails have network none or host");
    }
  }
  JailBlueprint blueprint;
  blueprint.spec = spec;
  ASSIGN_OR_RETURN(blueprint.cgroups, OpenCgroupParent(spec));
  return blueprint;
}

Result<jail::JailProcess> SpawnWaitingJail(const JailSpec& spec, const CgroupFds& cgroup,
                                           bool clone_parent, int net_ns_fd) {
  if ((spec.network.mode == NetworkMode::kAllowlist) != (net_ns_fd >= 0)) {
    // Never a jail of an allow-list spec without its proxy (it would silently have no
    // network), nor one of another spec in a namespace it was not planned for.
    return Error(ErrorCode::kInternal,
                 "a prepared jail joins a proxy's network namespace exactly when its "
                 "network.mode is allowlist (mode " +
                     std::string(Name(spec.network.mode)) + ")");
  }
  RETURN_IF_ERROR(PrepareHostDirs(spec));
  ASSIGN_OR_RETURN(jail::JailPlan plan, Plan(spec));
  if (cgroup.clone_into < 0 && cgroup.attach.empty()) AddPidsRlimitFallback(spec, &plan);
  plan.deferred_command = true;
  if (net_ns_fd >= 0) {
    plan.net_ns_fd = net_ns_fd;
    plan.clone_flags &= ~static_cast<unsigned long>(CLONE_NEWNET);
  }
  // Until its command arrives the jail holds /dev/null, not the preparer's stdio.
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return Error::FromErrno(errno, "/dev/null");
  return SpawnJail(plan, dev_null.get(), dev_null.get(), dev_null.get(), cgroup, clone_parent);
}

Result<PreparedJail> PrepareJail(const JailBlueprint& blueprint, JailSpawner* spawner) {
  PreparedJail jail;
  ASSIGN_OR_RETURN(jail.cgroup, CreateJailCgroup(blueprint.spec, blueprint.cgroups));
  // Its figures are read on the way to the answer: the files are opened now.
  if (jail.cgroup.cgroup) jail.cgroup.cgroup->KeepStatFilesOpen();
  CgroupFds fds = FdsOf(jail.cgroup.cgroup.get());
  // The proxy listens before the jail exists, as in RunJail: the command, whenever it
  // comes, finds it up. On failure `jail` goes and takes the proxy with it.
  int net_ns_fd = -1;
  if (blueprint.spec.network.mode == NetworkMode::kAllowlist) {
    ASSIGN_OR_RETURN(jail.network, StartRunNetwork(blueprint.spec, "pool"));
    net_ns_fd = jail.network->netns_fd();
  }
  if (spawner != nullptr && spawner->alive()) {
    auto spawned = spawner->Spawn(fds, net_ns_fd);
    if (spawned || spawner->alive()) {
      ASSIGN_OR_RETURN(jail.process, std::move(spawned));
      return jail;
    }
    spdlog::warn("{}; cloning jails in this process from now on", spawned.error().message());
  }
  ASSIGN_OR_RETURN(jail.process, SpawnWaitingJail(blueprint.spec, fds, false, net_ns_fd));
  return jail;
}

Result<RunOutcome> RunPrepared(PreparedJail jail, const JailSpec& spec, const RunOptions& options) {
  PhaseTrace trace;
  // The jail was built from an already validated spec; only what this run adds is new.
  RETURN_IF_ERROR(ValidateLateFieldsSpec(spec));
  if (options.tty) {
    return Error(ErrorCode::kInvalidArgument, "a prepared jail cannot give its command a terminal");
  }
  jail::DeferredCommand deferred = CommandFor(spec);
  // The init then waits for our SIGKILL after its report (EndEarly) instead of exiting.
  deferred.hold_after_report = EarlyOutcome(spec, jail.cgroup, options);
  ASSIGN_OR_RETURN(std::string command, jail::EncodeCommand(deferred));
  Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(Stdio io, MakeStdio(options));
  RunOutcome outcome = NewOutcome(spec, jail.cgroup, options);
  outcome.landlock = LandlockOutcomeFor(spec);
  outcome.pooled = true;
  StopSources stops(options);
  // If this fails the jail is gone (its root could not be built, say): its setup record,
  // read below, says why.
  (void)jail.process.SendCommand(command, io.child_stdin(), io.child_stdout(), io.child_stderr());
  io.CloseChildEnds();
  trace.Mark("hand-off");
  return Supervise(jail.process, jail.cgroup, io, spec, options, stops, start, std::move(outcome),
                   trace, jail.network ? &*jail.network : nullptr);
}

}  // namespace corral::runtime
