#include "runtime/sandboxes/persistent.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <utility>

#include "base/files.h"
#include "base/scope_guard.h"
#include "jail/command.h"
#include "jail/enter.h"
#include "jail/spawn.h"
#include "runtime/net/netproxy_launch.h"
#include "runtime/run/identity.h"
#include "runtime/run/jail_cgroup.h"
#include "runtime/run/landlock_plan.h"
#include "runtime/run/phase_trace.h"
#include "runtime/run/planner.h"
#include "runtime/run/pty.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/run/user_cgroup.h"
#include "runtime/run/watch.h"
#include "runtime/sandboxes/init_program.h"
#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/workspace_overlay.h"
#include "runtime/sandboxes/workspace_snapshot.h"
#include "runtime/spec/config.h"

namespace corral::runtime {

namespace {

constexpr int kInitSetupTimeoutMs = 30000;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A rootless sandbox created without a cgroup (no delegated v2 subtree, and
// unsafe.allow_missing_limits) has an empty cgroup_name: it has no manager.
Result<std::unique_ptr<cgroups::CgroupManager>> ManagerFor(const SandboxRecord& record) {
  if (record.cgroup_name.empty()) {
    return Error(ErrorCode::kUnsupported,
                 "sandbox '" + record.name + "' has no cgroup (rootless, limits not enforced)");
  }
  return cgroups::CgroupManager::Create(ManagerOptionsFor(record.spec.cgroups));
}

// The recorded init runs: same pid, same start time (a recycled pid is not the sandbox),
// and not exiting. A killed init is dead at once, while it is a zombie and while the kernel
// tears its PID namespace down (its root is gone then and no exec could enter).
bool InitAlive(const SandboxRecord& r) { return ProcessRunning(r.init_pid, r.init_start_ticks); }

Error DeadSandbox(const SandboxRecord& r) {
  return Error(ErrorCode::kNotFound, "sandbox '" + r.name +
                                         "' is dead (its init exited); `corral rm " + r.name +
                                         "` cleans it up");
}

// A pidfd for the recorded init, or an error saying the sandbox is dead. Checked after
// the pidfd is open, so the pidfd is the recorded init, not a recycled pid.
Result<UniqueFd> OpenInit(const SandboxRecord& r) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, r.init_pid, 0)));
  if (!pidfd || !InitAlive(r)) return DeadSandbox(r);
  return pidfd;
}

std::string ExecCgroupName() {
  static std::atomic<int> counter{0};
  return "exec-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

std::string CgroupNameOf(const std::string& sandbox_name) { return "sbx-" + sandbox_name; }

// Tears a sandbox down, whatever state it is in.
Status Teardown(SandboxStore& store, const SandboxRecord& r) {
  auto manager = ManagerFor(r);
  bool cgroup_gone = false;
  if (manager) {
    // Whatever exists of it: a teardown cut short (on v1, between hierarchies) leaves a
    // part that OpenCgroup would not open. Kills the init, every exec, every daemon.
    RETURN_IF_ERROR((*manager)->RemoveLeftover(r.cgroup_name));
    cgroup_gone = true;
  }
  // Without a cgroup the init is the handle: killing PID 1 ends the PID namespace.
  if (!cgroup_gone || InitAlive(r)) {
    if (auto pidfd = OpenInit(r)) ::syscall(SYS_pidfd_send_signal, pidfd->get(), SIGKILL, 0, 0);
  }
  // The proxy ends with the init and then removes its summary; this covers a proxy that
  // was killed or is still on its way out.
  (void)::unlink(NetworkSummaryPath(r.name).c_str());
  // Its changes not committed go with it (a commit or snapshot cut short is finished
  // first: a snapshot whose layer was moved out is kept, any other undone).
  if (r.spec.workspace_overlay) (void)FinishWorkspaceSnapshots(r.name);
  RemoveWorkspaceOverlay(r.spec);
  return store.Forget(r.name);
}

// A kill freezes the sandbox's cgroup, signals every process, then thaws it (cgroups/:
// nothing forks in between). Whoever ran it dying in between leaves the sandbox frozen
// for good: its init still "runs", but nothing in it ever will again. corral freezes a
// sandbox for nothing else, so a frozen one is a removal that has to be finished.
bool FrozenByAnInterruptedKill(const cgroups::Cgroup& cg) {
  for (const std::string& dir : cg.paths()) {
    if (auto v1 = ReadFile(dir + "/freezer.state"); v1 && Trim(*v1) != "THAWED") return true;
    if (auto v2 = ReadFile(dir + "/cgroup.freeze"); v2 && Trim(*v2) == "1") return true;
  }
  return false;
}

// Whatever exists of the record's cgroup, in any hierarchy, killed and removed.
Status RemoveLeftoverCgroups(const SandboxRecord& r) {
  ASSIGN_OR_RETURN(auto manager, ManagerFor(r));
  return manager->RemoveLeftover(r.cgroup_name);
}

// A create that died half-way (its claim's lock is free and no record was saved): kills
// and removes what its last note names (Teardown of the record in progress), then frees
// the name. A claim without a note (its maker died before the first) can only have left
// cgroups under `cgroups`. False if `name` holds no such claim (it has a record, or is
// being made now).
bool UndoStaleClaim(SandboxStore& store, const std::string& name, const CgroupSpec& cgroups) {
  auto stale = store.TakeStaleClaim(name);
  if (!stale || !*stale) return false;
  Status undone = Ok();
  if (const auto& pending = (*stale)->pending) {
    // Its cgroups may be half-made (on v1, some controllers' directories only), which
    // Teardown would not open; removing them kills an init inside. Teardown then kills an
    // init outside any cgroup (rootless) and forgets the claim.
    if (!pending->cgroup_name.empty()) undone = RemoveLeftoverCgroups(*pending);
    if (undone) undone = Teardown(store, *pending);
  } else if (::geteuid() == 0) {
    undone = RemoveUnrecordedCgroups(name, cgroups);
    if (undone) undone = store.RemoveStaleClaim(name);
  } else {
    undone = store.RemoveStaleClaim(name);
  }
  if (!undone) {
    spdlog::warn("sandbox {}: undoing a create that did not finish: {}", name,
                 undone.error().message());
    return false;
  }
  spdlog::info("sandbox {}: a create that did not finish (its process died) was undone", name);
  return true;
}

// Every claim left by a dead maker, undone.
void UndoStaleClaims(SandboxStore& store) {
  for (const std::string& name : store.ClaimsWithoutRecord()) {
    (void)UndoStaleClaim(store, name, CgroupSpec{});
  }
}

// The sandbox's cgroup, which its init joins; null for a rootless sandbox without a cgroup
// (then record->cgroup_name is emptied and the warning logged).
struct SandboxCgroups {
  std::unique_ptr<cgroups::Cgroup> sandbox;
  std::jthread attach_warmup;  // see CgroupManager::WarmUpAttach
};
Result<SandboxCgroups> CreateSandboxCgroups(SandboxRecord* record) {
  SandboxCgroups out;
  std::unique_ptr<cgroups::CgroupManager> manager;
  if (::geteuid() == 0) {
    ASSIGN_OR_RETURN(manager, ManagerFor(*record));
  } else {
    // Not root: as `run` (runtime/run/user_cgroup.h): a delegated cgroup v2 subtree, else
    // a refusal, or under unsafe.allow_missing_limits no cgroup at all.
    auto user_parent = PrepareUserCgroupParent(record->spec);
    if (!user_parent) {
      const std::string why = user_parent.error().message();
      if (!record->spec.unsafe.allow_missing_limits) {
        return Error(ErrorCode::kUnsupported, MissingLimitsRefusal(record->spec, why));
      }
      spdlog::warn("{}", MissingLimitsWarning(record->spec, why));
      record->cgroup_name.clear();
      return out;
    }
    // Recorded: later execs, ps and rm (other processes) find the sandbox's cgroup there.
    if (record->spec.cgroups.parent == CgroupSpec().parent) {
      record->spec.cgroups.parent = *user_parent;
    }
    ASSIGN_OR_RETURN(manager, ManagerFor(*record));
  }
  ASSIGN_OR_RETURN(out.sandbox, manager->CreateCgroup(record->cgroup_name));
  auto warnings = out.sandbox->ApplyLimits(CgroupLimitsFor(record->spec.limits),
                                           record->spec.unsafe.allow_missing_limits);
  if (!warnings) return warnings.error();
  for (const auto& w : *warnings) spdlog::warn("{}", w);
  // The init lives in the sandbox's cgroup itself (`init` stays null): one memory cgroup
  // per idle sandbox. Every memory cgroup costs kernel memory (496 KiB per mkdir on Debian
  // 12's 6.1, more with every filesystem on the host: README, "What one sandbox costs").
  // On cgroup v2 an exec's cgroup is then a child without controllers (cgroups/cgroup.h,
  // CreateChild); sandboxes of an earlier corral, whose init has a leaf of its own, keep
  // that layout and their execs get controllers as before.
  out.attach_warmup = manager->WarmUpAttach();
  return out;
}

// Whether setgroups(2) is off in the sandbox's user namespace (a rootless sandbox whose
// caller has no subordinate range): an exec must then skip it, as the init did.
bool SetgroupsDenied(const SandboxRecord& record) {
  if ((record.ns_flags & CLONE_NEWUSER) == 0) return false;
  auto text = ReadFile("/proc/" + std::to_string(record.init_pid) + "/setgroups");
  return text && text->rfind("deny", 0) == 0;
}

}  // namespace

std::string NewSandboxId() {
  unsigned char bytes[6];
  if (::getrandom(bytes, sizeof bytes, 0) != sizeof bytes) {
    uint64_t t = static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^ ::getpid();
    std::memcpy(bytes, &t, sizeof bytes);
  }
  char hex[13];
  for (int i = 0; i < 6; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return hex;
}

// Beside the store, not in a sandbox's directory: rm removes that at once, while the
// proxy may still be on its way out.
std::string NetworkSummaryPath(const std::string& name) {
  return RuntimeDir() + "/network/" + name + ".json";
}

std::vector<std::string> ReapIdleSandboxes() {
  std::vector<std::string> removed;
  auto store = SandboxStore::Open();
  if (!store) return removed;
  UndoStaleClaims(*store);
  double now = UnixNow();
  for (const IdleEntry& e : store->IdleCandidates()) {
    if (now - store->LastUsed(e.name) < e.timeout_seconds) continue;
    auto r = store->Find(e.name);
    if (!r || !InitAlive(*r)) continue;
    // An exec in progress or a hold (HoldSandbox) has the lock shared: not idle.
    auto lock = store->Lock(r->name, /*shared=*/false, /*wait=*/false);
    if (!lock) continue;
    // Used between our first look and the lock: a hold or exec touched it, then let go.
    if (UnixNow() - store->LastUsed(e.name) < e.timeout_seconds) continue;
    if (auto st = Teardown(*store, *r); st) {
      removed.push_back(r->name);
    } else {
      spdlog::warn("removing idle sandbox {}: {}", r->name, st.error().message());
    }
  }
  return removed;
}

Result<SandboxRecord> CreateSandbox(const CreateRequest& request) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  ReapIdleSandboxes();
  SandboxRecord record;
  record.id = NewSandboxId();
  record.name = request.name.empty() ? record.id : request.name;
  record.cgroup_name = CgroupNameOf(record.name);
  record.created_at = UnixNow();
  record.idle_timeout_seconds = request.idle_timeout_seconds;
  record.spec = request.spec;
  record.spec.argv = {"corral-init"};  // the init; execs bring their own argv
  // Layers come from a snapshot named here, never from the spec a caller sent.
  record.spec.workspace_layers.clear();
  record.spec.workspace_upper.clear();
  std::optional<SnapshotHold> from;  // held until the record names the snapshot's layers
  if (!request.from_snapshot.empty()) {
    ASSIGN_OR_RETURN(from, HoldSnapshot(request.from_snapshot));
    RETURN_IF_ERROR(StartFromSnapshot(from->record, &record.spec));
  }
  RETURN_IF_ERROR(ValidateSpec(record.spec));
  RETURN_IF_ERROR(RequireProcessMode(record.spec, "persistent sandboxes"));
  // Its reserved host id stays the same when it is re-created under this name, and the
  // record keeps the identity its init gets (runtime/run/identity.h).
  RETURN_IF_ERROR(PinIdentity(record.name, &record.spec));
  for (const auto& w : SandboxWarnings(record.spec)) spdlog::warn("{}", w);
  auto claim = store.Claim(record.name);
  // The name may be held by a create that died half-way: undo that, then claim again.
  if (!claim && claim.error().code() == ErrorCode::kAlreadyExists &&
      UndoStaleClaim(store, record.name, record.spec.cgroups)) {
    claim = store.Claim(record.name);
  }
  if (!claim) return claim.error();
  ScopeGuard forget([&] { (void)store.Forget(record.name); });
  // Noted before each step that leaves something behind, so that whoever finds this claim
  // after a crash knows what to undo (the cgroup's name and driver, then the init).
  RETURN_IF_ERROR(store.NotePending(claim->get(), record));

  ASSIGN_OR_RETURN(SandboxCgroups cgroups, CreateSandboxCgroups(&record));
  RETURN_IF_ERROR(store.NotePending(claim->get(), record));
  std::unique_ptr<cgroups::Cgroup>& sandbox_cg = cgroups.sandbox;
  // The init sits in the sandbox's cgroup itself (CreateSandboxCgroups).
  cgroups::Cgroup* init_cg = sandbox_cg.get();

  RETURN_IF_ERROR(PrepareHostDirs(record.spec));
  RETURN_IF_ERROR(PrepareWorkspaceOverlay(&record.spec, record.name));
  ScopeGuard drop_overlay([&] { RemoveWorkspaceOverlay(record.spec); });
  ASSIGN_OR_RETURN(jail::JailPlan plan, Plan(record.spec));
  if (!sandbox_cg) AddPidsRlimitFallback(record.spec, &plan);
  record.landlock = plan.landlock;
  plan.init_mode = jail::InitMode::kPersistent;
  plan.die_with_parent = false;
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return Error::FromErrno(errno, "/dev/null");

  auto init_program = OpenInitProgram();
  if (!init_program) {
    spdlog::warn(
        "{}; the sandbox's PID 1 stays a copy of corral (about 0.7 MiB more host "
        "memory per idle sandbox)",
        init_program.error().message());
  }

  jail::SpawnRequest spawn;
  spawn.plan = &plan;
  spawn.stdin_fd = spawn.stdout_fd = spawn.stderr_fd = dev_null.get();
  if (init_program) spawn.init_exe_fd = init_program->get();
  if (init_cg) {
    spawn.cgroup_fd = init_cg->clone_into_fd();
    if (spawn.cgroup_fd < 0) spawn.cgroup_attach_fds = init_cg->attach_fds();
  }
  ASSIGN_OR_RETURN(jail::JailProcess init, jail::Spawn(spawn));
  ASSIGN_OR_RETURN(auto setup, init.AwaitSetup(kInitSetupTimeoutMs));
  if (setup) {
    return Error(ErrorCode::kSetupFailed, setup->ToString(), setup->err);
  }
  record.init_pid = init.pid();
  record.init_start_ticks = ProcessStartTicks(init.pid()).value_or(0);
  if (from) RETURN_IF_ERROR(RestoreSnapshotTmp(from->record, init.pid()));
  RETURN_IF_ERROR(store.NotePending(claim->get(), record));
  std::optional<net::NetworkService> network;
  if (record.spec.network.mode == NetworkMode::kAllowlist) {
    // Before any exec can run: the proxy's listeners are up when create returns.
    net::LaunchOptions launch;
    launch.runtime_dir = RuntimeDir();
    launch.sandbox = record.name;
    launch.summary_path = NetworkSummaryPath(record.name);
    if (::mkdir((launch.runtime_dir + "/network").c_str(), 0700) != 0 && errno != EEXIST) {
      return Error::FromErrno(errno, "mkdir " + launch.runtime_dir + "/network");
    }
    launch.never = request.network_never;
    ASSIGN_OR_RETURN(network,
                     net::NetworkService::StartForSandbox(record.spec, init.pid(), launch));
  }
  // With a user namespace (a reserved identity), an exec joins it too: its uid 1000 is
  // then the sandbox's host id, not the host's uid 1000.
  record.ns_flags = NamespaceFlags(record.spec.namespaces) |
                    (record.spec.namespaces.cgroup ? CLONE_NEWCGROUP : 0) |
                    (plan.user_ns.enabled ? CLONE_NEWUSER : 0);
  RETURN_IF_ERROR(store.Save(record));
  store.EndClaim(record.name);
  // From here on the sandbox outlives us (and its proxy ends when its init does).
  if (network) network->Release();
  init.Release();
  if (sandbox_cg) sandbox_cg->Release();
  forget.Dismiss();
  drop_overlay.Dismiss();
  return record;
}

namespace {

// An exec's stdio: the caller's pipes relayed, so that what the exec leaves in the
// background cannot keep them open after it returns (RunOptions::relay_pipes).
Result<Stdio> MakeExecStdio(RunOptions io) {
  io.relay_pipes = true;
  return MakeStdio(io);
}

// The sandbox's spec with the exec's own command, environment, directory and timeout.
JailSpec ExecSpec(const SandboxRecord& record, const ExecRequest& request) {
  JailSpec spec = record.spec;
  spec.argv = request.argv;
  for (const auto& kv : request.env) spec.env.push_back(kv);
  if (request.workdir) spec.workdir = request.workdir;
  if (request.timeout_seconds) spec.limits.timeout_seconds = *request.timeout_seconds;
  if (request.output_limit_bytes) spec.limits.output_limit_bytes = *request.output_limit_bytes;
  return spec;
}

// A new leaf cgroup for one exec under the sandbox's, or null when limits are off.
Result<std::unique_ptr<cgroups::Cgroup>> CreateExecCgroup(const SandboxRecord& record,
                                                          std::jthread* attach_warmup) {
  auto manager = ManagerFor(record);
  if (!manager) {
    if (record.spec.unsafe.allow_missing_limits) return std::unique_ptr<cgroups::Cgroup>();
    return manager.error();
  }
  ASSIGN_OR_RETURN(auto sandbox_cg, (*manager)->OpenCgroup(record.cgroup_name));
  sandbox_cg->Release();  // only a handle; the sandbox's cgroup is not ours to remove
  ASSIGN_OR_RETURN(auto exec_cg, sandbox_cg->CreateChild(ExecCgroupName()));
  if (attach_warmup != nullptr) *attach_warmup = (*manager)->WarmUpAttach();
  return exec_cg;
}

// Clones the exec's process into the sandbox (and into `exec_cg`).
Result<jail::JailProcess> SpawnExec(const SandboxRecord& record, int init_pidfd,
                                    const jail::JailPlan& plan, cgroups::Cgroup* exec_cg,
                                    int stdin_fd, int stdout_fd, int stderr_fd, bool deferred,
                                    bool child_subreaper = false, bool late_hardening = false) {
  // Opened after the pidfd: a recycled pid cannot slip in between (OpenInit checked it).
  UniqueFd init_root(::open(("/proc/" + std::to_string(record.init_pid) + "/root").c_str(),
                            O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!init_root) {
    // The init died since OpenInit looked: say so, not that a /proc path is missing.
    if (!InitAlive(record)) return DeadSandbox(record);
    return Error::FromErrno(errno, "root of sandbox " + record.name);
  }
  jail::EnterRequest enter;
  enter.plan = &plan;
  enter.init_pidfd = init_pidfd;
  enter.init_root_fd = init_root.get();
  enter.ns_flags = record.ns_flags;
  enter.stdin_fd = stdin_fd;
  enter.stdout_fd = stdout_fd;
  enter.stderr_fd = stderr_fd;
  enter.deferred_command = deferred;
  enter.child_subreaper = child_subreaper;
  enter.late_hardening = late_hardening;
  if (exec_cg) {  // both: which one is used depends on the path (jail/enter.h)
    enter.cgroup_fd = exec_cg->clone_into_fd();
    enter.cgroup_attach_fds = exec_cg->attach_fds();
  }
  return jail::SpawnInto(enter);
}

// From a started exec to its outcome. Background processes it leaves keep running.
// RunOptions::on_outcome is called before the exec's cgroup is removed.
Result<RunOutcome> SuperviseExec(const std::string& sandbox, jail::JailProcess& command,
                                 std::unique_ptr<cgroups::Cgroup>& exec_cg, Stdio& io,
                                 const JailSpec& spec, const RunOptions& options,
                                 const StopSources& stops, Clock::time_point start,
                                 RunOutcome outcome, PhaseTrace& trace) {
  OutputCapture out(spec.limits.output_limit_bytes);
  OutputCapture err(spec.limits.output_limit_bytes);
  Watch watch = NewWatch(&command, exec_cg.get(), &io, &out, &err, stops, spec.limits, start);
  // One wait for the setup, exec and run; the setup channel is read after it: it closed
  // at the execve, or holds the failure of a child that has exited.
  WaitForExit(watch);
  rusage usage{};
  auto status = command.Reap(&usage);
  trace.Mark("command");
  ASSIGN_OR_RETURN(auto setup, command.AwaitSetup(kInitSetupTimeoutMs));
  if (setup) {
    outcome.status = RunStatus::kSetupFailed;
    outcome.setup_error = std::move(*setup);
  }
  // What the command left running in the background stays; its output is not waited for.
  DrainAvailable(watch);
  cgroups::Stats stats;
  if (exec_cg) {
    if (auto s = exec_cg->ReadStats()) stats = *s;
  }
  outcome.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  FillOutcome(spec.limits, status ? *status : 0, watch, stats, usage, &outcome);
  if (options.on_outcome) options.on_outcome(outcome);
  if (exec_cg) {
    auto left = exec_cg->Processes();
    if (left && left->empty()) {
      // Its OOM kills leave with it on cgroup v1: the sandbox's record keeps them.
      if (exec_cg->Destroy() && stats.oom_kills > 0) {
        if (auto store = SandboxStore::Open()) {
          (void)store->AddRemovedOomKills(sandbox, stats.oom_kills);
        }
      }
    } else {
      exec_cg->Release();  // background processes live on; `rm` removes the cgroup
    }
  }
  trace.Mark("teardown");
  return outcome;
}

}  // namespace

Result<RunOutcome> ExecInSandbox(const ExecRequest& request) {
  PhaseTrace trace;
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  ASSIGN_OR_RETURN(SandboxRecord record, store.Find(request.sandbox));
  // Held for the whole exec: an idle sweep must not remove a sandbox that is in use. The
  // sweep runs only once this sandbox is held and marked used, so it never takes it.
  ASSIGN_OR_RETURN(UniqueFd lock, store.Lock(record.name, /*shared=*/true));
  RETURN_IF_ERROR(RefuseIfPaused(store, record));
  (void)store.TouchLastUsed(record.name);
  ReapIdleSandboxes();
  trace.Mark("reap-idle");
  ASSIGN_OR_RETURN(UniqueFd init_pidfd, OpenInit(record));
  if (request.argv.empty()) return Error(ErrorCode::kInvalidArgument, "exec: no command given");

  JailSpec spec = ExecSpec(record, request);
  Clock::time_point start = Clock::now();
  (void)store.TouchLastUsed(record.name);
  std::jthread attach_warmup;  // joined on return; see CgroupManager::WarmUpAttach
  ASSIGN_OR_RETURN(auto exec_cg, CreateExecCgroup(record, &attach_warmup));
  trace.Mark("cgroup");
  ASSIGN_OR_RETURN(jail::JailPlan plan, PlanExec(spec));
  if (record.cgroup_name.empty()) AddPidsRlimitFallback(spec, &plan);
  plan.landlock = record.landlock;
  plan.user_ns.deny_setgroups = SetgroupsDenied(record);
  plan.allocate_tty = request.io.tty;
  ASSIGN_OR_RETURN(Stdio io, MakeExecStdio(request.io));
  trace.Mark("plan");
  RunOutcome outcome;
  outcome.captured = request.io.capture_output;
  outcome.landlock = LandlockOutcomeOf(plan.landlock);
  outcome.identity = IdentityOutcomeFor(spec);
  AddMountHints(spec, &outcome);
  StopSources stops(request.io);
  ASSIGN_OR_RETURN(
      jail::JailProcess command,
      SpawnExec(record, init_pidfd.get(), plan, exec_cg.get(), io.child_stdin(), io.child_stdout(),
                io.child_stderr(), /*deferred=*/false, request.child_subreaper));
  io.CloseChildEnds();
  trace.Mark("clone");
  if (request.io.tty) {
    RETURN_IF_ERROR(AcceptTerminal(io, command.pidfd(), request.io.pass_stdin));
  }
  return SuperviseExec(record.name, command, exec_cg, io, spec, request.io, stops, start,
                       std::move(outcome), trace);
}

Result<std::unique_ptr<ExecSlot>> PrepareExecSlot(const std::string& sandbox,
                                                  const ExecSlotOptions& options) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  ASSIGN_OR_RETURN(SandboxRecord record, store.Find(sandbox));
  RETURN_IF_ERROR(RefuseIfPaused(store, record));
  auto slot = std::make_unique<ExecSlot>();
  ASSIGN_OR_RETURN(slot->init_pidfd, OpenInit(record));
  ASSIGN_OR_RETURN(slot->exec_cg, CreateExecCgroup(record, nullptr));
  // Its figures are read on the way to the answer: the files are opened now.
  if (slot->exec_cg) slot->exec_cg->KeepStatFilesOpen();
  JailSpec spec = record.spec;
  spec.argv = {"/bin/true"};  // planned without a command: it comes with the request
  ASSIGN_OR_RETURN(slot->plan, PlanExec(spec));
  slot->plan.landlock = record.landlock;
  slot->plan.user_ns.deny_setgroups = SetgroupsDenied(record);
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return Error::FromErrno(errno, "/dev/null");
  ASSIGN_OR_RETURN(slot->process,
                   SpawnExec(record, slot->init_pidfd.get(), slot->plan, slot->exec_cg.get(),
                             dev_null.get(), dev_null.get(), dev_null.get(), /*deferred=*/true,
                             options.child_subreaper, options.late_hardening));
  slot->child_subreaper = options.child_subreaper;
  // Ready once it says so: joined, entered, waiting. Else its setup record says why.
  pollfd ready{slot->process.status_fd(), POLLIN, 0};
  char byte = 0;
  if (::poll(&ready, 1, kInitSetupTimeoutMs) != 1 ||
      ::recv(slot->process.status_fd(), &byte, 1, MSG_DONTWAIT) != 1) {
    auto setup = slot->process.AwaitSetup(1000);
    if (setup && *setup) return Error(ErrorCode::kSetupFailed, (*setup)->ToString());
    return Error(ErrorCode::kIo, "exec slot for sandbox " + record.name + " did not get ready");
  }
  slot->record = std::move(record);
  return slot;
}

Result<std::optional<RunOutcome>> ExecInSlot(std::unique_ptr<ExecSlot> slot,
                                             const ExecRequest& request, std::string* unusable) {
  PhaseTrace trace;
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  const SandboxRecord& record = slot->record;
  // The shared lock first (as ExecInSandbox holds it), then the checks: `rm` kills the
  // slot with the rest of the sandbox, and a sandbox created again under the name has
  // another init, so a live slot whose init (a pidfd: the very process the record named
  // when the slot was made) is alive is in the sandbox the request names.
  auto lock = store.Lock(record.name, /*shared=*/true);
  pollfd exited[2] = {{slot->process.pidfd(), POLLIN, 0}, {slot->init_pidfd.get(), POLLIN, 0}};
  if (!lock || ::poll(exited, 2, 0) != 0 || !InitAlive(record)) {
    *unusable = "the slot or its sandbox died";
    return std::optional<RunOutcome>();
  }
  if (store.PausedSince(record.name)) {
    *unusable = "the sandbox is paused";  // the normal way says so
    return std::optional<RunOutcome>();
  }
  if (request.argv.empty()) return Error(ErrorCode::kInvalidArgument, "exec: no command given");
  if (request.io.tty) {  // the slot's process is past the point where it could open one
    *unusable = "a terminal is opened by a cold exec";
    return std::optional<RunOutcome>();
  }
  if (request.child_subreaper != slot->child_subreaper) {  // set when it entered
    *unusable = "the slot was prepared for another kind of exec (child subreaper)";
    return std::optional<RunOutcome>();
  }
  JailSpec spec = ExecSpec(record, request);
  auto encoded = jail::EncodeCommand(CommandFor(spec));
  if (!encoded) {
    *unusable = encoded.error().message();
    return std::optional<RunOutcome>();
  }
  Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(Stdio io, MakeExecStdio(request.io));
  RunOutcome outcome;
  outcome.captured = request.io.capture_output;
  outcome.landlock = LandlockOutcomeOf(slot->plan.landlock);
  outcome.identity = IdentityOutcomeFor(spec);
  AddMountHints(spec, &outcome);
  outcome.pooled = true;
  StopSources stops(request.io);
  // If this fails the slot is gone: its setup record, read while supervising, says why.
  (void)slot->process.SendCommand(*encoded, io.child_stdin(), io.child_stdout(), io.child_stderr());
  io.CloseChildEnds();
  trace.Mark("hand-off");
  (void)store.TouchLastUsed(record.name);  // while the command starts, not before
  auto result = SuperviseExec(record.name, slot->process, slot->exec_cg, io, spec, request.io,
                              stops, start, std::move(outcome), trace);
  if (!result) return result.error();
  return std::optional<RunOutcome>(std::move(*result));
}

Result<SandboxHold> HoldSandbox(const std::string& name_or_id) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  auto gone = [&name_or_id] {
    return Error(ErrorCode::kNotFound, "sandbox '" + name_or_id + "' is gone");
  };
  auto found = store.Find(name_or_id);
  if (!found) return found.error();
  auto lock = store.Lock(found->name, /*shared=*/true);
  if (!lock) return gone();  // removed before we could lock it: its directory is gone
  // Whoever held it exclusively (the reaper, `rm`) may have removed it, and another
  // sandbox may have been created under the name since: look again, under the lock.
  auto now = store.Find(found->name);
  if (!now || now->id != found->id || !InitAlive(*now)) return gone();
  RETURN_IF_ERROR(RefuseIfPaused(store, *now));
  (void)store.TouchLastUsed(now->name);
  return SandboxHold{std::move(*now), std::move(*lock)};
}

void TouchSandbox(const std::string& name) {
  if (auto store = SandboxStore::Open()) (void)store->TouchLastUsed(name);
}

Status RemoveUnrecordedCgroups(const std::string& name, const CgroupSpec& cgroups) {
  ASSIGN_OR_RETURN(auto manager, cgroups::CgroupManager::Create(ManagerOptionsFor(cgroups)));
  return manager->RemoveLeftover(CgroupNameOf(name));
}

// A sandbox whose record cannot be read (corrupt, an I/O error): what the record would say
// is unknown, so its cgroups are found by its name (killing what runs in them) and its
// directory and index entries go. A rootless sandbox's init (no cgroup) cannot be found.
namespace {
Status RemoveUnreadable(SandboxStore& store, const std::string& name, const Error& why) {
  struct stat st {};
  const bool has_dir = ::stat(store.DirOf(name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (!IsValidSandboxName(name) || !has_dir) return why;
  if (::geteuid() == 0) RETURN_IF_ERROR(RemoveUnrecordedCgroups(name, CgroupSpec{}));
  RETURN_IF_ERROR(store.Forget(name));
  spdlog::warn("sandbox {}: its record could not be read ({}); removed what was left of it", name,
               why.message());
  return Ok();
}
}  // namespace

Status RemoveSandbox(const std::string& name_or_id) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  Result<SandboxRecord> found = store.Find(name_or_id);
  if (!found) {
    // `corral rm` of a name whose create died half-way undoes that create.
    const bool missing = found.error().code() == ErrorCode::kNotFound;
    if (missing && UndoStaleClaim(store, name_or_id, CgroupSpec{})) return Ok();
    const ErrorCode code = found.error().code();
    // A bad name, or a record of a newer corral (which knows how to remove it): as it is.
    if (missing || code == ErrorCode::kInvalidArgument || code == ErrorCode::kUnsupported) {
      return found.error();
    }
    return RemoveUnreadable(store, name_or_id, found.error());
  }
  const SandboxRecord record = std::move(*found);
  // rm is authoritative: it does not wait for running execs, it kills them.
  auto lock = store.Lock(record.name, /*shared=*/false, /*wait=*/false);
  (void)lock;
  return Teardown(store, record);
}

namespace {

// The cgroup's stats and process count, into `info`.
void ReadFigures(const SandboxStore& store, const std::string& name,
                 const cgroups::CgroupManager& manager, const cgroups::Cgroup& cg,
                 SandboxInfo* info) {
  if (auto stats = cg.ReadStats()) info->stats = *stats;
  // v2's memory.events still counts the kills of removed exec cgroups; v1 forgot them.
  if (info->stats && manager.driver() == cgroups::Driver::kV1) {
    info->stats->oom_kills += store.RemovedOomKills(name);
  }
  if (auto procs = cg.Processes()) info->processes = procs->size();
}

// The cgroup managers of a listing, one per (driver, parent): making one reads the mount
// table and checks the parent directories, which a listing of thousands of records need
// not repeat per record. Null where the record has no cgroup or its manager failed.
class ManagerCache {
 public:
  cgroups::CgroupManager* For(const SandboxRecord& record) {
    if (record.cgroup_name.empty()) return nullptr;  // rootless without a cgroup
    auto key =
        std::make_pair(std::string(Name(record.spec.cgroups.driver)), record.spec.cgroups.parent);
    auto it = managers_.find(key);
    if (it == managers_.end()) {
      auto made = ManagerFor(record);
      it = managers_.emplace(std::move(key), made ? std::move(*made) : nullptr).first;
    }
    return it->second.get();
  }

 private:
  std::map<std::pair<std::string, std::string>, std::unique_ptr<cgroups::CgroupManager>> managers_;
};

// One record's state. The cgroup is opened once for the frozen check and the figures (a
// listing of thousands of sandboxes paid for each open twice).
SandboxInfo InspectRecord(const SandboxStore& store, SandboxRecord record, Inspect what,
                          ManagerCache& managers) {
  SandboxInfo info;
  double now = UnixNow();
  info.alive = InitAlive(record);
  info.age_seconds = now - record.created_at;
  info.idle_seconds = now - store.LastUsed(record.name);
  if (auto since = store.PausedSince(record.name)) info.paused_seconds = now - *since;
  if (cgroups::CgroupManager* manager = managers.For(record)) {
    if (auto cg = manager->OpenCgroup(record.cgroup_name)) {
      (*cg)->Release();
      // A paused sandbox's cgroup is frozen on purpose.
      if (info.alive && !info.paused_seconds && FrozenByAnInterruptedKill(**cg)) {
        info.alive = false;
      }
      if (what == Inspect::kFigures) ReadFigures(store, record.name, *manager, **cg, &info);
    }
  }
  info.record = std::move(record);
  return info;
}

}  // namespace

Result<SandboxInfo> InspectSandbox(const std::string& name_or_id, Inspect what) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  ASSIGN_OR_RETURN(SandboxRecord record, store.Find(name_or_id));
  ManagerCache managers;
  return InspectRecord(store, std::move(record), what, managers);
}

std::vector<SandboxInfo> ListSandboxes(std::vector<UnreadableRecord>* unreadable, Inspect what) {
  ReapIdleSandboxes();
  std::vector<SandboxInfo> out;
  auto store = SandboxStore::Open();
  if (!store) {
    if (unreadable != nullptr) unreadable->push_back({"", "", store.error().message()});
    return out;
  }
  store->RemoveDeadTempClaims();  // a scan of every sandbox's directory: here, not per create
  ManagerCache managers;
  for (SandboxRecord& r : store->List(unreadable)) {
    out.push_back(InspectRecord(*store, std::move(r), what, managers));
  }
  return out;
}

}  // namespace corral::runtime
