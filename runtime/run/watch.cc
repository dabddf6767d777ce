#include "runtime/run/watch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace corral::runtime {

namespace {

Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Drains `fd` once into `capture`; false at EOF or on a hard error.
bool DrainOnce(int fd, OutputCapture& capture) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    capture.Append(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && (errno == EINTR || errno == EAGAIN);
}

// Asks the tree to stop: SIGTERM to every process in the cgroup. Without a cgroup we
// cannot see inside the jail, so the watched process gets SIGKILL (for a one-shot init
// that takes the whole PID namespace with it).
void BeginStop(Watch& w) {
  if (w.cgroup != nullptr) {
    (void)w.cgroup->SignalAll(SIGTERM);
  } else {
    w.process->Kill(SIGKILL);
  }
}

// One stop request from an interrupt stream: the signal number byte, SIGHUP at EOF or on
// an error; nullopt if nothing was there after all.
std::optional<int> ReadInterrupt(int fd) {
  unsigned char signo = 0;
  ssize_t n = ::recv(fd, &signo, 1, MSG_DONTWAIT);
  if (n == 1) return signo > 0 && signo < NSIG ? static_cast<int>(signo) : SIGTERM;
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return std::nullopt;
  return SIGHUP;
}

double TimevalMs(const timeval& tv) { return tv.tv_sec * 1000.0 + tv.tv_usec / 1000.0; }

}  // namespace

void Stdio::CloseChildEnds() {
  out.write.Reset();
  err.write.Reset();
}

Result<Stdio> MakeStdio(const RunOptions& options) {
  Stdio io;
  io.capture = options.capture_output;
  io.pass_stdin = options.pass_stdin;
  io.caller_stdin = options.stdin_fd;
  io.caller_stdout = options.stdout_fd;
  io.caller_stderr = options.stderr_fd;
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

Watch NewWatch(jail::JailProcess* process, cgroups::Cgroup* cgroup, Stdio* io, OutputCapture* out,
               OutputCapture* err, const StopSources& stops, const LimitsSpec& limits,
               Clock::time_point start) {
  Watch w;
  w.process = process;
  w.cgroup = cgroup;
  w.io = io;
  w.out = out;
  w.err = err;
  w.signal_fd = stops.signal_fd();
  w.interrupt_fd = stops.interrupt_fd;
  w.grace_seconds = limits.kill_grace_seconds;
  if (limits.timeout_seconds > 0) {
    w.deadline =
        start + std::chrono::milliseconds(static_cast<int64_t>(limits.timeout_seconds * 1000));
  }
  return w;
}

void KillNow(Watch& w) {
  w.process->Kill(SIGKILL);
  if (w.cgroup != nullptr) (void)w.cgroup->KillAll();
}

void WaitForExit(Watch& w) {
  std::optional<Clock::time_point> kill_at;
  for (;;) {
    Clock::time_point now = Clock::now();
    Clock::time_point wake = kill_at ? *kill_at : w.deadline;
    if (now >= wake) {
      if (!kill_at) {
        w.timed_out = true;
        BeginStop(w);
        kill_at = now + std::chrono::milliseconds(static_cast<int64_t>(w.grace_seconds * 1000));
      } else {
        KillNow(w);
        kill_at = Clock::time_point::max();
      }
      continue;
    }
    int timeout_ms = -1;
    if (wake != Clock::time_point::max()) {
      timeout_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1);
    }
    pollfd fds[6] = {{w.process->pidfd(), POLLIN, 0},
                     {w.signal_fd, POLLIN, 0},
                     {w.io->out.read.get(), POLLIN, 0},
                     {w.io->err.read.get(), POLLIN, 0},
                     {w.interrupt_fd, POLLIN, 0},
                     {w.report_fd, POLLIN, 0}};
    int n = ::poll(fds, 6, timeout_ms);
    if (n < 0 && errno != EINTR) return;
    if (n <= 0) continue;
    if (fds[2].revents != 0 && !DrainOnce(w.io->out.read.get(), *w.out)) w.io->out.read.Reset();
    if (fds[3].revents != 0 && !DrainOnce(w.io->err.read.get(), *w.err)) w.io->err.read.Reset();
    if (fds[1].revents != 0) {
      signalfd_siginfo info;
      if (::read(w.signal_fd, &info, sizeof info) == sizeof info && !w.interrupted_by) {
        w.interrupted_by = static_cast<int>(info.ssi_signo);
        KillNow(w);
      }
    }
    if (fds[4].revents != 0) {
      std::optional<int> sig = ReadInterrupt(w.interrupt_fd);
      if (sig && !w.interrupted_by) {
        w.interrupted_by = *sig;
        KillNow(w);
      }
      if (!sig || *sig == SIGHUP) w.interrupt_fd = -1;  // hung up: nothing more will come
    }
    if (fds[0].revents != 0 || fds[5].revents != 0) return;
  }
}

void DrainToEof(Watch& w) {
  Clock::time_point until = Clock::now() + std::chrono::seconds(2);
  for (auto [fd, capture] : {std::pair{&w.io->out.read, w.out}, {&w.io->err.read, w.err}}) {
    while (fd->valid() && Clock::now() < until) {
      pollfd p{fd->get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      if (!DrainOnce(fd->get(), *capture)) fd->Reset();
    }
  }
}

void DrainAvailable(Watch& w) {
  for (auto [fd, capture] : {std::pair{&w.io->out.read, w.out}, {&w.io->err.read, w.err}}) {
    while (fd->valid()) {
      pollfd p{fd->get(), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0 || !DrainOnce(fd->get(), *capture)) break;
    }
    fd->Reset();
  }
}

void FillOutcome(const LimitsSpec& limits, int wait_status, const Watch& w,
                 const cgroups::Stats& stats, const rusage& usage, RunOutcome* o) {
  o->stdout_stream = w.out->Finish();
  o->stderr_stream = w.err->Finish();
  o->cpu_user_ms = stats.cpu_user_usec ? *stats.cpu_user_usec / 1000.0 : TimevalMs(usage.ru_utime);
  o->cpu_system_ms =
      stats.cpu_system_usec ? *stats.cpu_system_usec / 1000.0 : TimevalMs(usage.ru_stime);
  // Without a cgroup, the largest single process's peak is the best we know.
  o->memory_peak_bytes = stats.memory_peak_bytes;
  if (!o->memory_peak_bytes) o->memory_peak_bytes = usage.ru_maxrss * 1024LL;
  o->pids_peak = stats.pids_peak;
  o->interrupted_by = w.interrupted_by;
  if (o->status == RunStatus::kSetupFailed) return;

  if (WIFEXITED(wait_status)) {
    o->status = RunStatus::kExited;
    o->exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    o->status = RunStatus::kSignaled;
    o->signal = WTERMSIG(wait_status);
  }
  double cpu_ms = o->cpu_user_ms + o->cpu_system_ms;
  if (w.timed_out) {
    o->status = RunStatus::kTimedOut;
    o->limit = LimitKind::kWallTime;
  } else if (stats.oom_kills > 0 && o->status == RunStatus::kSignaled) {
    o->status = RunStatus::kOomKilled;
    o->limit = LimitKind::kMemory;
  } else if (o->signal == SIGXCPU || (o->signal == SIGKILL && limits.cpu_time_seconds &&
                                      cpu_ms >= *limits.cpu_time_seconds * 1000.0)) {
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

}  // namespace corral::runtime
