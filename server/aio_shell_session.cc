#include "server/aio_shell_session.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "server/aio_session_impl.h"

namespace corral::server::aio {

// The shell's loop (see the header). $1 is the handshake nonce: the first line says
// "<nonce> <$$> <cwd>" so we learn the shell's pid in the sandbox and where it started.
// The command runs in a function so that a timeout can abort the rest of it: SIGUSR1's
// trap returns from the function (bash runs it once the killed foreground job is gone,
// or between two builtins of a loop), and the loop prints the marker as usual.
const char* const kSessionScript = R"SH(exec 3<&0 4>&1 0</dev/null
__corral_run() { eval "$__corral_c"; }
trap 'return 130 2>/dev/null' USR1
printf '%s %s %s\n' "$1" "$$" "$PWD" >&4
while IFS= read -r -d '' -u 3 __corral_m && IFS= read -r -d '' -u 3 __corral_c; do
  __corral_run 3<&- 4>&-
  printf '\n%s %d %s\n' "$__corral_m" "$?" "$PWD" >&4
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

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
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
void ShellSession::SetNoChangeTimeout(double seconds) {
  impl_->core->SetNoChangeTimeout(seconds);
}
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
bool ShellSession::finished() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->control_done && impl_->core->shell_done;
}
bool ShellSession::closed() const {
  std::lock_guard lock(impl_->core->mu);
  return impl_->core->closing;
}

}  // namespace corral::server::aio
