#include "runtime/run/watch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <tuple>

#include "runtime/run/pty.h"

namespace corral::runtime {

namespace {

// Drains `fd` once into `capture`, or into `relay` when the output is relayed; false at
// EOF or on a hard error (EIO: a pty whose slave is closed everywhere).
bool DrainOnce(int fd, OutputCapture& capture, OutputRelay* relay) {
  if (relay != nullptr && relay->splice) {
    std::optional<bool> spliced = relay->Splice(fd);
    if (spliced) return *spliced;
  }
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    if (relay != nullptr) {
      relay->Write(buf, static_cast<size_t>(n));
    } else {
      capture.Append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  return n < 0 && (errno == EINTR || errno == EAGAIN);
}

OutputRelay* RelayOf(std::optional<OutputRelay>& relay) { return relay ? &*relay : nullptr; }

// The stdin relay's and the pty's part of one poll round.
void PumpInput(Watch& w, const pollfd& source, const pollfd& sink, const pollfd& winch) {
  if (winch.revents != 0 && w.io->pty) w.io->pty->OnWinch();
  if (!w.io->in_relay) return;
  InputRelay& in = *w.io->in_relay;
  bool more = true;
  if (sink.revents != 0) more = in.WriteSink();
  if (more && source.revents != 0 && in.wants_source()) more = in.ReadSource();
  if (!more && !in.sink.valid()) w.io->in_relay.reset();
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
    InputRelay* in = w.io->in_relay ? &*w.io->in_relay : nullptr;
    pollfd fds[9] = {{w.process->pidfd(), POLLIN, 0},
                     {w.signal_fd, POLLIN, 0},
                     {w.io->out.read.get(), POLLIN, 0},
                     {w.io->err.read.get(), POLLIN, 0},
                     {w.interrupt_fd, POLLIN, 0},
                     {w.report_fd, POLLIN, 0},
                     {in && in->wants_source() ? in->source : -1, POLLIN, 0},
                     {in && in->wants_sink() ? in->sink.get() : -1, POLLOUT, 0},
                     {w.io->pty ? w.io->pty->winch.get() : -1, POLLIN, 0}};
    int n = ::poll(fds, 9, timeout_ms);
    if (n < 0 && errno != EINTR) return;
    if (n <= 0) continue;
    if (fds[2].revents != 0 && !DrainOnce(w.io->out.read.get(), *w.out, RelayOf(w.io->out_relay))) {
      w.io->out.read.Reset();
    }
    if (fds[3].revents != 0 && !DrainOnce(w.io->err.read.get(), *w.err, RelayOf(w.io->err_relay))) {
      w.io->err.read.Reset();
    }
    PumpInput(w, fds[6], fds[7], fds[8]);
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
  for (auto [fd, capture, relay] : {std::tuple{&w.io->out.read, w.out, RelayOf(w.io->out_relay)},
                                    {&w.io->err.read, w.err, RelayOf(w.io->err_relay)}}) {
    while (fd->valid() && Clock::now() < until) {
      pollfd p{fd->get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      if (!DrainOnce(fd->get(), *capture, relay)) fd->Reset();
    }
  }
  w.io->FinishRelays();
}

void DrainAvailable(Watch& w) {
  // A pty's master gets what the command wrote last a moment later (the kernel pushes it
  // through a work queue), so "available now" could lose it: wait for its EOF (EIO, once
  // no process holds the slave), bounded like DrainToEof.
  if (w.io->pty) {
    DrainToEof(w);
    return;
  }
  for (auto [fd, capture, relay] : {std::tuple{&w.io->out.read, w.out, RelayOf(w.io->out_relay)},
                                    {&w.io->err.read, w.err, RelayOf(w.io->err_relay)}}) {
    while (fd->valid()) {
      pollfd p{fd->get(), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0 || !DrainOnce(fd->get(), *capture, relay)) break;
    }
    fd->Reset();
  }
  w.io->FinishRelays();
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

  ClassifyEnd(
      wait_status,
      EndEvidence{w.timed_out, stats.oom_kills, stats.pids_limit_hit, limits.cpu_time_seconds}, o);
}

}  // namespace corral::runtime
