#include "runtime/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <spdlog/spdlog.h>

#include "base/scope_guard.h"
#include "base/unique_fd.h"
#include "jail/spawn.h"
#include "runtime/config.h"
#include "runtime/jail_cgroup.h"
#include "runtime/output_capture.h"
#include "runtime/planner.h"

namespace corral::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// Signals that stop the jail instead of killing corral outright.
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// Blocks the stop signals for the lifetime of a run and reads them from a signalfd, so
// the wait loop sees them as events. Restores the old mask on destruction.
class SignalGuard {
 public:
  SignalGuard() {
    sigset_t set = StopSignals();
    ::sigprocmask(SIG_BLOCK, &set, &old_);
    fd_.Reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~SignalGuard() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
  int fd() const { return fd_.get(); }

 private:
  sigset_t old_;
  UniqueFd fd_;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// The child's stdio and the parent's ends of the capture pipes.
struct Stdio {
  UniqueFd dev_null;
  Pipe out;
  Pipe err;
};

Result<Stdio> MakeStdio(const RunOptions& options) {
  Stdio io;
  if (!options.pass_stdin) {
    io.dev_null.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!io.dev_null) return Error::FromErrno(errno, "/dev/null");
  }
  if (options.capture_output) {
    ASSIGN_OR_RETURN(io.out, MakePipe());
    ASSIGN_OR_RETURN(io.err, MakePipe());
  }
  return io;
}

// Drains `fd` into `capture`; returns false at EOF (or error).
bool DrainOnce(int fd, OutputCapture& capture) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    capture.Append(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && (errno == EINTR || errno == EAGAIN);
}

// Everything the wait loop tracks.
struct WaitState {
  jail::JailProcess* process;
  cgroups::Cgroup* cgroup;  // may be null
  UniqueFd* out;            // capture pipe read ends; invalid when not capturing
  UniqueFd* err;
  OutputCapture* out_capture;
  OutputCapture* err_capture;
  int signal_fd;
  Clock::time_point deadline;  // Clock::time_point::max() = none
  double grace_seconds;
  bool timed_out = false;
  std::optional<int> interrupted_by;
};

// Asks the whole tree to stop: SIGTERM to every process in the cgroup, or — without a
// cgroup, where we cannot see inside the PID namespace — SIGKILL to the init, which takes
// the namespace with it.
void BeginStop(WaitState& s) {
  if (s.cgroup != nullptr) {
    (void)s.cgroup->SignalAll(SIGTERM);
  } else {
    s.process->Kill(SIGKILL);
  }
}

void KillNow(WaitState& s) {
  s.process->Kill(SIGKILL);
  if (s.cgroup != nullptr) (void)s.cgroup->KillAll();
}

// Waits until the init exits, draining output, enforcing the deadline and the grace.
void WaitForInit(WaitState& s) {
  std::optional<Clock::time_point> kill_at;
  bool init_done = false;
  while (!init_done) {
    Clock::time_point now = Clock::now();
    Clock::time_point wake = kill_at ? *kill_at : s.deadline;
    if (now >= wake) {
      if (!kill_at) {
        s.timed_out = true;
        BeginStop(s);
        kill_at = now + std::chrono::milliseconds(static_cast<int64_t>(s.grace_seconds * 1000));
      } else {
        KillNow(s);
        kill_at = Clock::time_point::max();
      }
      continue;
    }
    int timeout_ms = -1;
    if (wake != Clock::time_point::max()) {
      timeout_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1);
    }
    pollfd fds[4] = {{s.process->pidfd(), POLLIN, 0},
                     {s.signal_fd, POLLIN, 0},
                     {s.out->get(), POLLIN, 0},
                     {s.err->get(), POLLIN, 0}};
    int n = ::poll(fds, 4, timeout_ms);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[2].revents != 0 && !DrainOnce(s.out->get(), *s.out_capture)) s.out->Reset();
    if (fds[3].revents != 0 && !DrainOnce(s.err->get(), *s.err_capture)) s.err->Reset();
    if (fds[1].revents != 0) {
      signalfd_siginfo info;
      if (::read(s.signal_fd, &info, sizeof info) == sizeof info && !s.interrupted_by) {
        s.interrupted_by = static_cast<int>(info.ssi_signo);
        KillNow(s);
      }
    }
    if (fds[0].revents != 0) init_done = true;
  }
}

// After the init is gone, nothing in the jail can still write (the PID namespace died
// with it and the cgroup was emptied), so reading to EOF terminates; the bound guards
// against a writer that escaped both (no PID namespace, no cgroup).
void DrainToEof(UniqueFd& fd, OutputCapture& capture) {
  Clock::time_point until = Clock::now() + std::chrono::seconds(2);
  while (fd.valid() && Clock::now() < until) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (!DrainOnce(fd.get(), capture)) fd.Reset();
  }
}

double TimevalMs(const timeval& tv) { return tv.tv_sec * 1000.0 + tv.tv_usec / 1000.0; }

void Classify(const JailSpec& spec, const std::optional<jail::InitReport>& report,
              int init_status, const WaitState& wait, const cgroups::Stats& stats,
              RunOutcome* o) {
  int status = report ? report->wait_status : init_status;
  if (WIFEXITED(status)) {
    o->status = RunStatus::kExited;
    o->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    o->status = RunStatus::kSignaled;
    o->signal = WTERMSIG(status);
  }
  if (wait.timed_out) {
    o->status = RunStatus::kTimedOut;
    o->limit = LimitKind::kWallTime;
  } else if (stats.oom_kills > 0 && o->status == RunStatus::kSignaled) {
    o->status = RunStatus::kOomKilled;
    o->limit = LimitKind::kMemory;
  } else if (o->signal == SIGXCPU ||
             (o->signal == SIGKILL && spec.limits.cpu_time_seconds &&
              o->cpu_user_ms + o->cpu_system_ms >= *spec.limits.cpu_time_seconds * 1000.0)) {
    o->limit = LimitKind::kCpuTime;
  } else if (o->signal == SIGXFSZ) {
    o->limit = LimitKind::kFileSize;
  } else if (stats.oom_kills > 0) {
    o->limit = LimitKind::kMemory;  // a child was OOM-killed; the command survived it
  } else if (stats.pids_limit_hit) {
    o->limit = LimitKind::kPids;
  } else if (o->stdout_stream.dropped_bytes > 0 || o->stderr_stream.dropped_bytes > 0) {
    o->limit = LimitKind::kOutput;
  }
}

}  // namespace

Result<RunOutcome> RunJail(const JailSpec& spec, const RunOptions& options) {
  std::vector<std::string> problems = Validate(spec);
  if (!problems.empty()) {
    std::string text = "invalid configuration:";
    for (const auto& p : problems) text += "\n  " + p;
    return Error(ErrorCode::kInvalidArgument, text);
  }
  Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(JailCgroup cg, CreateJailCgroup(spec));
  RETURN_IF_ERROR(PrepareHostDirs(spec));
  ASSIGN_OR_RETURN(jail::JailPlan plan, Plan(spec));
  ASSIGN_OR_RETURN(Stdio io, MakeStdio(options));

  RunOutcome outcome;
  outcome.warnings = std::move(cg.warnings);
  outcome.captured = options.capture_output;
  SignalGuard signals;

  jail::SpawnRequest request;
  request.plan = &plan;
  request.stdin_fd = options.pass_stdin ? 0 : io.dev_null.get();
  request.stdout_fd = options.capture_output ? io.out.write.get() : 1;
  request.stderr_fd = options.capture_output ? io.err.write.get() : 2;
  if (cg.cgroup) {
    request.cgroup_fd = cg.cgroup->clone_into_fd();
    if (request.cgroup_fd < 0) request.cgroup_attach_fds = cg.cgroup->attach_fds();
  }
  auto spawned = jail::Spawn(request);
  if (!spawned && request.cgroup_fd >= 0 && spawned.error().sys_errno() == ENOSYS) {
    request.cgroup_fd = -1;  // kernel without clone3: the child joins the cgroup itself
    request.cgroup_attach_fds = cg.cgroup->attach_fds();
    spawned = jail::Spawn(request);
  }
  if (!spawned) return spawned.error();
  jail::JailProcess process = std::move(*spawned);
  // Our copies of the write ends would keep the pipes open after the jail is gone.
  io.out.write.Reset();
  io.err.write.Reset();

  OutputCapture out_capture(spec.limits.output_limit_bytes);
  OutputCapture err_capture(spec.limits.output_limit_bytes);
  WaitState wait{&process, cg.cgroup.get(), &io.out.read, &io.err.read, &out_capture,
                 &err_capture, signals.fd(), Clock::time_point::max(),
                 spec.limits.kill_grace_seconds, false, std::nullopt};
  if (spec.limits.timeout_seconds > 0) {
    wait.deadline = start + std::chrono::milliseconds(
                                static_cast<int64_t>(spec.limits.timeout_seconds * 1000));
  }

  int setup_timeout_ms = -1;
  if (spec.limits.timeout_seconds > 0) {
    setup_timeout_ms = static_cast<int>(spec.limits.timeout_seconds * 1000);
  }
  auto setup = process.AwaitSetup(setup_timeout_ms);
  if (!setup) {
    KillNow(wait);
    return setup.error();
  }
  if (setup->has_value()) {
    outcome.status = RunStatus::kSetupFailed;
    outcome.setup_error = std::move(**setup);
    KillNow(wait);
  }
  WaitForInit(wait);
  rusage usage{};
  auto init_status = process.Reap(&usage);
  std::optional<jail::InitReport> report = process.TakeReport();
  cgroups::Stats stats;
  if (cg.cgroup) {
    (void)cg.cgroup->KillAll();  // no PID namespace: stragglers may remain
    if (auto s = cg.cgroup->ReadStats()) stats = *s;
  }
  DrainToEof(io.out.read, out_capture);
  DrainToEof(io.err.read, err_capture);
  outcome.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  outcome.stdout_stream = out_capture.Finish();
  outcome.stderr_stream = err_capture.Finish();
  outcome.cpu_user_ms = stats.cpu_user_usec ? *stats.cpu_user_usec / 1000.0
                                            : TimevalMs(usage.ru_utime);
  outcome.cpu_system_ms = stats.cpu_system_usec ? *stats.cpu_system_usec / 1000.0
                                                : TimevalMs(usage.ru_stime);
  outcome.memory_peak_bytes = stats.memory_peak_bytes;
  if (!outcome.memory_peak_bytes) outcome.memory_peak_bytes = usage.ru_maxrss * 1024LL;
  outcome.pids_peak = stats.pids_peak;
  outcome.interrupted_by = wait.interrupted_by;
  if (outcome.status != RunStatus::kSetupFailed) {
    Classify(spec, report, init_status ? *init_status : 0, wait, stats, &outcome);
  }
  if (cg.cgroup) {
    if (auto st = cg.cgroup->Destroy(); !st) spdlog::warn("{}", st.error().message());
  }
  return outcome;
}

}  // namespace corral::runtime
