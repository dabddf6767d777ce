// The two threads of a shell session and the state machine between them
// (runtime/sessions/session_impl.h).
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>

#include "base/fd_pair.h"
#include "runtime/pool/exec_slot_keeper.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sessions/orphan_sink.h"
#include "runtime/sessions/session_impl.h"

namespace corral::runtime::sessions {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kNoTimeoutSeconds = 3e8;  // "forever" for the shell's own exec
constexpr auto kEscalateEvery = std::chrono::seconds(1);
constexpr int kTreeKillRounds = 3;  // then the shell itself (a builtin loop will not stop)

SteadyTime After(SteadyTime t, double seconds) {
  if (seconds >= kNoTimeoutSeconds) return SteadyTime::max();
  return t + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Keeps head and tail of an over-long buffer (the marker is always at the tail).
void AppendCapped(std::string& buf, const char* data, size_t n, size_t cap) {
  buf.append(data, n);
  if (cap < 64 || buf.size() <= cap) return;
  static const std::string kCut = "\n[... output truncated ...]\n";
  size_t half = cap / 2;
  buf = buf.substr(0, half) + kCut + buf.substr(buf.size() - half);
}

}  // namespace

SessionCore::SessionCore(SessionOptions o) : opt(std::move(o)) {
  wake.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (opt.workdir) cwd = *opt.workdir;
}

void SessionCore::Wake() {
  uint64_t one = 1;
  (void)!::write(wake.get(), &one, sizeof one);
}

// ---- the shell thread ----------------------------------------------------------------

Result<runtime::RunOutcome> SessionCore::StartShell(const runtime::ExecRequest& req) {
  if (opt.slots == nullptr) return runtime::ExecInSandbox(req);
  // A slot prepared ahead (a warm sandbox's: runtime/pool/warm_pool.h) has paid the cgroup join
  // (on v1 an RCU grace period) and the entry into the sandbox. No slot is asked for
  // here: one made for the next session would join a cgroup while this shell, the spare
  // shell and the next create do, and slow them more than it saves (measured in
  // server/README.md). The slot's process is the keeper thread's child, which outlives
  // every session (server/daemon.cc).
  std::unique_ptr<runtime::ExecSlot> slot = opt.slots->Take(req.sandbox);
  if (!slot) return runtime::ExecInSandbox(req);
  std::string unusable;
  auto outcome = runtime::ExecInSlot(std::move(slot), req, &unusable);
  if (!outcome) return outcome.error();
  if (*outcome) return std::move(**outcome);
  return runtime::ExecInSandbox(req);  // the slot died (its sandbox was removed, say)
}

namespace {

// One shell's channels. Ours: `one` of each pair and the pipes' read ends; the shell's:
// the other ends, handed to its ExecRequest and closed once it has exited.
struct ShellChannels {
  SocketPair command;          // the shell's stdin: commands and the session's framing
  Pipe output;                 // its stdout (and stderr unless kept apart)
  std::optional<Pipe> errors;  // its stderr, when separate_stderr
  SocketPair interrupt;        // its ExecRequest's interrupt_fd
};

Result<ShellChannels> MakeShellChannels(bool separate_stderr) {
  ShellChannels c;
  ASSIGN_OR_RETURN(c.command, MakeSocketPair());
  ASSIGN_OR_RETURN(c.output, MakePipe());
  if (separate_stderr) {
    ASSIGN_OR_RETURN(c.errors, MakePipe());
  }
  ASSIGN_OR_RETURN(c.interrupt, MakeSocketPair());
  return c;
}

}  // namespace

void SessionCore::ShellLoop() {
  bool retried_default_dir = false;
  for (;;) {
    std::string workdir;
    {
      std::unique_lock lock(mu);
      shell_cv.wait(lock, [&] { return closing || exit_handled; });
      if (closing || !dead_reason.empty()) break;
      workdir = cwd;
    }
    auto hold = runtime::HoldSandbox(opt.corral_name);
    if (!hold) {
      std::lock_guard lock(mu);
      dead_reason = hold.error().message();
      break;
    }
    auto channels = MakeShellChannels(opt.separate_stderr);
    if (!channels) {
      std::lock_guard lock(mu);
      dead_reason = "cannot make the shell's pipes: " + channels.error().message();
      break;
    }
    std::string n = RandomHex();
    {
      std::lock_guard lock(mu);
      if (closing) break;  // the channels close with `channels`
      SetNonBlocking(channels->command.one.get());
      SetNonBlocking(channels->output.read.get());
      cmd_w = std::move(channels->command.one);
      out_r = std::move(channels->output.read);
      if (channels->errors) {
        SetNonBlocking(channels->errors->read.get());
        err_r = std::move(channels->errors->read);
      }
      interrupt_w = std::move(channels->interrupt.one);
      nonce = n;
      ready = false;
      incarnation = true;
      shell_exited = false;
      exit_handled = false;
      init_pid = hold->record.init_pid;
      init_ticks = hold->record.init_start_ticks;
      out_buf.clear();
      err_buf.clear();
      // The exported variables of the last shell, eval'd before the handshake.
      write_buf = exported_env;
      write_buf.push_back('\0');
      Wake();
    }
    runtime::ExecRequest req;
    req.sandbox = opt.corral_name;
    req.argv = {"bash", "--noprofile", "--norc", "-c", kSessionScript, "corral-shell", n};
    if (!workdir.empty()) req.workdir = workdir;
    req.timeout_seconds = kNoTimeoutSeconds;
    req.io.capture_output = false;
    req.io.pass_stdin = true;
    req.io.stdin_fd = channels->command.other.get();
    req.io.stdout_fd = channels->output.write.get();
    req.io.stderr_fd = channels->errors ? channels->errors->write.get() : req.io.stdout_fd;
    req.io.interrupt_fd =
        channels->interrupt.other.get();  // also keeps corral's signal handling out of the daemon
    // The shell is a child subreaper: what a command orphans (a double fork, `setsid cmd &`)
    // is reparented to the shell, not to the sandbox's init, so a timeout finds it among the
    // shell's new children (proc_tree.h) and kills it with the rest of the call. A
    // per-call cgroup would hold them as surely, but the command runs inside the shell
    // itself (cd and export must persist), so the shell would have to be moved between
    // cgroups around every call; a process group or session id the command can leave.
    req.child_subreaper = true;
    hold = Error(ErrorCode::kNotFound, "released");  // ExecInSandbox holds it itself
    auto outcome = StartShell(req);
    // The shell's ends close now, before the exit is reported: the pipes' EOF is how the
    // control thread sees the last of its output.
    channels = Error(ErrorCode::kNotFound, "closed");
    std::lock_guard lock(mu);
    shell_exited = true;
    const bool failed = !outcome || outcome->status == runtime::RunStatus::kSetupFailed;
    if (!failed) {
      shell_exit_code = outcome->signal ? 128 + *outcome->signal : outcome->exit_code;
    } else {
      shell_exit_code.reset();
      std::string why = !outcome               ? outcome.error().message()
                        : outcome->setup_error ? outcome->setup_error->message
                                               : "the shell could not start";
      if (!ready && !workdir.empty() && !retried_default_dir) {
        retried_default_dir = true;  // the last directory may be gone: start in the default
        cwd.clear();
      } else if (!ready) {
        dead_reason = why;
      }
    }
    Wake();
  }
  std::lock_guard lock(mu);
  shell_done = true;
  Wake();
}

// ---- the control thread --------------------------------------------------------------

void SessionCore::ReadPipes(bool* changed) {
  char chunk[65536];
  for (auto [fd, buf] : {std::pair{&out_r, &out_buf}, {&err_r, &err_buf}}) {
    size_t budget = 4 << 20;  // per pass, so that a flood cannot starve the timers
    while (fd->valid() && budget > 0) {
      ssize_t n = ::read(fd->get(), chunk, sizeof chunk);
      if (n > 0) {
        AppendCapped(*buf, chunk, static_cast<size_t>(n), opt.max_output_bytes);
        budget -= std::min(budget, static_cast<size_t>(n));
        *changed = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) fd->Reset();  // every writer is gone
      break;
    }
  }
}

void SessionCore::CheckHandshake() {
  size_t eol = out_buf.find('\n');
  if (eol == std::string::npos) return;
  std::string line = out_buf.substr(0, eol);
  out_buf.erase(0, eol + 1);
  if (line.rfind(nonce + " ", 0) != 0) return;  // not ours: the shell misbehaves; keep waiting
  std::string rest = line.substr(nonce.size() + 1);
  shell_pid = static_cast<pid_t>(std::atoi(rest.c_str()));
  size_t space = rest.find(' ');
  if (space != std::string::npos) cwd = rest.substr(space + 1);
  auto p = SandboxProcs::Open(init_pid, init_ticks);
  if (p) {
    procs.emplace(std::move(*p));
    shell_start = procs->StartOf(shell_pid).value_or(0);
  }
  ready = true;
}

CommandState* SessionCore::Find(const std::string& command_id) {
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    if (it->command_id == command_id) return &*it;
  }
  return nullptr;
}

void SessionCore::StartNext() {
  Pending p = std::move(queue.front());
  queue.pop_front();
  CommandState* s = Find(p.id);
  if (s == nullptr) return;  // trimmed away: cannot happen while queued
  keep = procs ? procs->ChildrenOf(shell_pid) : std::set<ProcId>{};
  marker = RandomHex();
  // The command first, then its marker: the shell reads the marker only once the command
  // is done (with fd 3 closed while it ran), so the command can never see it.
  write_buf += BuildScript(p.request);
  write_buf.push_back('\0');
  write_buf += marker;
  write_buf.push_back('\0');
  running = true;
  running_id = p.id;
  s->cwd = cwd;
  SteadyTime now = Clock::now();
  last_change = now;
  cmd_no_change = p.request.no_change_timeout.value_or(opt.no_change_timeout);
  hard_deadline = p.request.hard_timeout ? After(now, *p.request.hard_timeout) : SteadyTime::max();
  ending.reset();
  escalate_at = SteadyTime::max();
  kill_rounds = 0;
  out_buf.clear();
  err_buf.clear();
}

void SessionCore::Finish(CmdStatus status_if_running, std::optional<int> exit_code) {
  if (CommandState* s = Find(running_id)) {
    s->status = ending ? *ending : status_if_running;
    // AIO reports an exit code only for a command that completed.
    s->exit_code = s->status == CmdStatus::kCompleted ? exit_code : std::nullopt;
    s->output = out_buf;
    s->errors = err_buf;
  }
  running = false;
  running_id.clear();
  ending.reset();
  escalate_at = SteadyTime::max();
  hard_deadline = SteadyTime::max();
  marker.clear();
  out_buf.clear();
  err_buf.clear();
  ++commands_run;
  last_used_at = std::chrono::system_clock::now();
}

void SessionCore::CheckMarker() {
  const std::string needle = "\n" + marker + " ";
  size_t pos = out_buf.find(needle);
  if (pos == std::string::npos) return;
  size_t eol = out_buf.find('\n', pos + needle.size());
  if (eol == std::string::npos) return;
  std::string tail = out_buf.substr(pos + needle.size(), eol - pos - needle.size());
  int rc = std::atoi(tail.c_str());
  size_t space = tail.find(' ');
  if (space != std::string::npos) cwd = tail.substr(space + 1);
  // The exported variables, between "\n<marker>-env\n" and the marker line: kept for the
  // next incarnation of the shell (after a timeout kill or an `exit`).
  const std::string env_needle = "\n" + marker + "-env\n";
  size_t cut = pos;
  if (size_t env = out_buf.rfind(env_needle, pos); env != std::string::npos) {
    const size_t from = env + env_needle.size();
    if (pos - from <= kExportedEnvMax) exported_env = out_buf.substr(from, pos - from);
    cut = env;
  }
  out_buf.resize(cut);
  bool ignored = false;
  ReadPipes(&ignored);  // stderr written before the marker is in its pipe by now
  out_buf.resize(std::min(out_buf.size(), cut));
  Finish(CmdStatus::kCompleted, rc);
}

void SessionCore::KillTree() {
  if (procs && ready) {
    // The trap returns from the command's function once its foreground job is gone.
    (void)procs->Signal({shell_pid, shell_start}, SIGUSR1);
    (void)procs->KillCommandTree(shell_pid, keep);
  }
  ++kill_rounds;
  escalate_at = Clock::now() + kEscalateEvery;
}

void SessionCore::CheckTimers(SteadyTime now) {
  if (!running) return;
  if (!ending) {
    if (now >= hard_deadline) {
      ending = CmdStatus::kHardTimeout;
      KillTree();
    } else if (cmd_no_change > 0 && now >= After(last_change, cmd_no_change)) {
      ending = CmdStatus::kNoChangeTimeout;
      KillTree();
    }
    return;
  }
  if (now < escalate_at) return;
  if (kill_rounds < kTreeKillRounds) {
    KillTree();
    return;
  }
  // The command runs in the shell itself (a builtin loop): end the shell; it restarts.
  if (procs && ready && procs->Signal({shell_pid, shell_start}, SIGKILL)) {
    escalate_at = now + kEscalateEvery;
  } else if (interrupt_w) {
    unsigned char sig = SIGKILL;  // the whole exec, background jobs included: last resort
    (void)::send(interrupt_w.get(), &sig, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    escalate_at = SteadyTime::max();
  }
}

void SessionCore::HandleShellExit() {
  bool ignored = false;
  ReadPipes(&ignored);
  if (running) {
    if (!marker.empty()) CheckMarker();  // it may have printed the marker and then died
    if (running) Finish(CmdStatus::kCompleted, shell_exit_code);
  }
  // What background jobs still write to the old pipes is drained elsewhere, so that they
  // never die of SIGPIPE because this session moved on.
  OrphanSink::Instance().Adopt(std::move(out_r));
  OrphanSink::Instance().Adopt(std::move(err_r));
  cmd_w.Reset();
  interrupt_w.Reset();
  procs.reset();
  ready = false;
  incarnation = false;
  write_buf.clear();
  exit_handled = true;
  shell_cv.notify_all();
}

void SessionCore::FailQueued(const std::string& why) {
  for (const auto& p : queue) {
    if (CommandState* s = Find(p.id)) {
      s->status = CmdStatus::kTerminated;
      s->output = why;
    }
  }
  queue.clear();
}

int SessionCore::PollTimeoutMs(SteadyTime now) const {
  SteadyTime next = SteadyTime::max();
  for (const auto& w : waiters) next = std::min(next, w.deadline);
  if (running && !ending) {
    next = std::min(next, hard_deadline);
    if (cmd_no_change > 0) next = std::min(next, After(last_change, cmd_no_change));
  }
  if (running && ending) next = std::min(next, escalate_at);
  if (next == SteadyTime::max()) return -1;
  if (next <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

void SessionCore::CollectDue(SteadyTime now,
                             std::vector<std::pair<ShellSession::Callback, CommandState>>* due) {
  for (size_t i = 0; i < waiters.size();) {
    CommandState* s = Find(waiters[i].command_id);
    bool done = s == nullptr || s->status != CmdStatus::kRunning || shell_done;
    if (done || now >= waiters[i].deadline) {
      CommandState snap = s != nullptr ? *s : CommandState{};
      if (s != nullptr && running && s->command_id == running_id) {
        snap.output = out_buf;
        snap.errors = err_buf;
      }
      due->emplace_back(std::move(waiters[i].cb), std::move(snap));
      waiters.erase(waiters.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

void SessionCore::ControlLoop() {
  std::unique_lock lock(mu);
  bool interrupt_sent = false;
  for (;;) {
    SteadyTime now = Clock::now();
    bool changed = false;
    ReadPipes(&changed);
    if (incarnation && !ready) CheckHandshake();
    if (running && changed) last_change = now;
    if (running && ready) CheckMarker();
    if (!running && ready) {
      out_buf.clear();  // background jobs' chatter between commands
      err_buf.clear();
    }
    if (shell_exited && !exit_handled) HandleShellExit();
    if (closing) {
      FailQueued("the session was closed");
      if (hard_close && interrupt_w && !interrupt_sent) {
        unsigned char sig = SIGKILL;
        interrupt_sent = ::send(interrupt_w.get(), &sig, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
      }
      if (!hard_close && !running) cmd_w.Reset();  // EOF: the shell's loop ends, it exits
    } else if (ready && !running && !queue.empty()) {
      StartNext();
    }
    if (!dead_reason.empty() && !running) FailQueued("the shell cannot run: " + dead_reason);
    now = Clock::now();
    CheckTimers(now);
    while (!write_buf.empty() && cmd_w) {
      ssize_t n =
          ::send(cmd_w.get(), write_buf.data(), write_buf.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        write_buf.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) write_buf.clear();  // the shell is gone; its exit follows
      break;
    }
    std::vector<std::pair<ShellSession::Callback, CommandState>> due;
    CollectDue(now, &due);
    const bool finished = shell_done && !running;
    if (finished) {
      control_done = true;
      FailQueued(dead_reason.empty() ? "the session was closed" : dead_reason);
      for (auto& w : waiters) {
        CommandState* s = Find(w.command_id);
        due.emplace_back(std::move(w.cb), s != nullptr ? *s : CommandState{});
      }
      waiters.clear();
    }
    pollfd fds[4] = {{wake.get(), POLLIN, 0},
                     {out_r.get(), POLLIN, 0},
                     {err_r.get(), POLLIN, 0},
                     {write_buf.empty() ? -1 : cmd_w.get(), POLLOUT, 0}};
    int timeout = due.empty() ? PollTimeoutMs(now) : 0;
    lock.unlock();
    for (auto& [cb, state] : due) cb(state);
    if (finished) return;
    if (::poll(fds, 4, timeout) > 0 && (fds[0].revents & POLLIN) != 0) {
      uint64_t v;
      (void)!::read(wake.get(), &v, sizeof v);
    }
    lock.lock();
  }
}

}  // namespace corral::runtime::sessions
