#include "runtime/sessions/shell_session.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "runtime/sessions/session_impl.h"

namespace corral::runtime::sessions {

// The shell's loop (see the header). $1 is the handshake nonce: the first line says
// "<nonce> <$$> <cwd>" so we learn the shell's pid in the sandbox and where it started.
// The command runs in a function so that a timeout can abort the rest of it: SIGUSR1's
// trap returns from the function (bash runs it once the killed foreground job is gone,
// or between two builtins of a loop), and the loop prints the marker as usual.
// The first string read is the exported variables of the session's previous shell (`declare
// -px` text, empty for a new session), so that a restarted shell keeps them. After each
// command: its marker line is preceded by `<marker>-env` and the exported variables now —
// a builtin writing into the pipe, no fork on the command's path.
const char* const kSessionScript = R"SH(exec 3<&0 4>&1 0</dev/null
IFS= read -r -d '' -u 3 __corral_c && eval "$__corral_c" 2>/dev/null
__corral_run() { eval "$__corral_c"; }
trap 'return 130 2>/dev/null' USR1
printf '%s %s %s\n' "$1" "$$" "$PWD" >&4
while IFS= read -r -d '' -u 3 __corral_c; do
  __corral_run 3<&- 4>&-
  __corral_s=$?
  IFS= read -r -d '' -u 3 __corral_m
  { printf '\n%s-env\n' "$__corral_m"; declare -px; printf '\n%s %d %s\n' "$__corral_m" "$__corral_s" "$PWD"; } >&4
  unset __corral_m
done
)SH";

const char* CmdStatusName(CmdStatus status) {
  switch (status) {
    case CmdStatus::kRunning:
      return "running";
    case CmdStatus::kCompleted:
      return "completed";
    case CmdStatus::kNoChangeTimeout:
      return "no_change_timeout";
    case CmdStatus::kHardTimeout:
      return "hard_timeout";
    case CmdStatus::kTerminated:
      return "terminated";
  }
  return "completed";
}

std::string RandomHex() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::string RandomUuid() {
  std::string h = RandomHex();
  h[12] = '4';
  h[16] = "89ab"[h[16] % 4];
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

std::string BuildScript(const CommandRequest& r) {
  std::string script = r.command;
  if (!r.env.empty()) {
    // Assignments before a builtin are temporary in bash (not POSIX mode): the command
    // and its children see them, the session does not keep them.
    std::string prefix;
    for (const auto& [k, v] : r.env) prefix += k + "=" + ShellQuote(v) + " ";
    script = prefix + "eval " + ShellQuote(script);
  }
  if (r.exec_dir) script = "cd -- " + ShellQuote(*r.exec_dir) + " 2>/dev/null\n" + script;
  return script;
}

// ---- calls from other threads --------------------------------------------------------

Result<std::string> SessionCore::Submit(CommandRequest request) {
  std::lock_guard lock(mu);
  if (closing) return Error(ErrorCode::kNotFound, "the session was closed");
  if (!dead_reason.empty()) return Error(ErrorCode::kIo, "the shell cannot run: " + dead_reason);
  std::string id = RandomUuid();
  CommandState s;
  s.command_id = id;
  s.command = request.command;
  s.cwd = cwd;
  s.exists = true;
  history.push_back(std::move(s));
  while (history.size() > kHistoryMax && history.front().status != CmdStatus::kRunning) {
    history.pop_front();
  }
  queue.push_back({id, std::move(request)});
  last_used_at = std::chrono::system_clock::now();
  Wake();
  return id;
}

void SessionCore::Await(const std::string& command_id, SteadyTime deadline,
                        ShellSession::Callback cb) {
  std::unique_lock lock(mu);
  CommandState* s =
      command_id.empty() ? (history.empty() ? nullptr : &history.back()) : Find(command_id);
  if (s == nullptr || s->status != CmdStatus::kRunning || shell_done ||
      deadline <= std::chrono::steady_clock::now()) {
    CommandState snap = s != nullptr ? *s : CommandState{};
    if (s != nullptr && running && s->command_id == running_id) {
      snap.output = out_buf;
      snap.errors = err_buf;
    }
    lock.unlock();
    cb(snap);
    return;
  }
  waiters.push_back({s->command_id, deadline, std::move(cb)});
  Wake();
}

CommandState SessionCore::Latest() const {
  std::lock_guard lock(mu);
  if (history.empty()) return CommandState{};
  CommandState snap = history.back();
  if (running && snap.command_id == running_id) {
    snap.output = out_buf;
    snap.errors = err_buf;
  }
  return snap;
}

bool SessionCore::KillRunning() {
  std::lock_guard lock(mu);
  // Commands not started yet (the control thread may not have picked up the newest) end
  // without running; the running one is killed.
  const bool had_queued = !queue.empty();
  for (const auto& p : queue) {
    if (CommandState* s = Find(p.id)) s->status = CmdStatus::kTerminated;
  }
  queue.clear();
  if (running) {
    ending = CmdStatus::kTerminated;
    KillTree();
  }
  Wake();
  return running || had_queued;
}

void SessionCore::SetNoChangeTimeout(double seconds) {
  std::lock_guard lock(mu);
  opt.no_change_timeout = seconds;
  if (running) cmd_no_change = seconds;
  for (auto& p : queue) p.request.no_change_timeout = seconds;  // newer than their own
  Wake();
}

void SessionCore::Close(bool hard) {
  std::lock_guard lock(mu);
  CloseLocked(hard);
}

bool SessionCore::CloseIfIdle(std::chrono::system_clock::time_point used_before,
                              bool unused_counts) {
  std::lock_guard lock(mu);
  if (closing) return true;
  if (running || !queue.empty()) return false;
  if (history.empty() && !unused_counts) return false;
  if (last_used_at >= used_before) return false;
  CloseLocked(false);
  return true;
}

void SessionCore::CloseLocked(bool hard) {
  if (closing) {
    if (hard && !hard_close) hard_close = true;
    Wake();
    return;
  }
  closing = true;
  hard_close = hard;
  if (running && !ending) {
    ending = CmdStatus::kTerminated;
    KillTree();
  }
  shell_cv.notify_all();
  Wake();
}

// ---- ShellSession: the public face over Impl ------------------------------------------

ShellSession::ShellSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::shared_ptr<ShellSession> ShellSession::Start(SessionOptions options) {
  auto core = std::make_shared<SessionCore>(std::move(options));
  auto impl = std::make_unique<Impl>();
  impl->core = core;
  core->shell_thread = std::thread([core] { core->ShellLoop(); });
  core->control_thread = std::thread([core] { core->ControlLoop(); });
  return std::shared_ptr<ShellSession>(new ShellSession(std::move(impl)));
}

ShellSession::~ShellSession() {
  auto& core = impl_->core;
  core->Close(false);
  // The last reference may go away in a callback on the control thread: never join it
  // from itself. The threads own the core, so detaching is safe.
  for (std::thread* t : {&core->shell_thread, &core->control_thread}) {
    if (!t->joinable()) continue;
    if (t->get_id() == std::this_thread::get_id()) {
      t->detach();
    } else {
      t->join();
    }
  }
}

const std::string& ShellSession::id() const { return impl_->core->opt.id; }
bool ShellSession::separate_stderr() const { return impl_->core->opt.separate_stderr; }
Result<std::string> ShellSession::Submit(CommandRequest request) {
  return impl_->core->Submit(std::move(request));
}
void ShellSession::Await(const std::string& command_id, SteadyTime deadline, Callback cb) {
  impl_->core->Await(command_id, deadline, std::move(cb));
}
CommandState ShellSession::Latest() const { return impl_->core->Latest(); }
std::vector<CommandState> ShellSession::History() const {
  std::lock_guard lock(impl_->core->mu);
  return {impl_->core->history.begin(), impl_->core->history.end()};
}
bool ShellSession::KillRunning() { return impl_->core->KillRunning(); }
void ShellSession::SetNoChangeTimeout(double seconds) { impl_->core->SetNoChangeTimeout(seconds); }
double ShellSession::no_change_timeout() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->opt.no_change_timeout;
}
bool ShellSession::busy() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->running || !impl_->core->queue.empty();
}
std::string ShellSession::working_dir() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->cwd;
}
std::chrono::system_clock::time_point ShellSession::created_at() const {
  return impl_->core->created_at;
}
std::chrono::system_clock::time_point ShellSession::last_used_at() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->last_used_at;
}
size_t ShellSession::commands_run() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->commands_run;
}
void ShellSession::Close(bool hard) { impl_->core->Close(hard); }
bool ShellSession::CloseIfIdle(std::chrono::system_clock::time_point used_before,
                               bool unused_counts) {
  return impl_->core->CloseIfIdle(used_before, unused_counts);
}
bool ShellSession::finished() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->control_done && impl_->core->shell_done;
}
bool ShellSession::closed() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->closing;
}

}  // namespace corral::runtime::sessions
