// The inside of a ShellSession (runtime/sessions/shell_session.h): its state, shared by the
// shell thread, the control thread and callers, under one mutex. Private to the session's
// two .cc files. The threads own the core (shared_ptr), so a session object destroyed on
// its own control thread can detach them safely.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/shell_quote.h"
#include "base/unique_fd.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sessions/proc_tree.h"
#include "runtime/sessions/shell_session.h"

namespace corral::runtime::sessions {

extern const char* const kSessionScript;
inline constexpr size_t kHistoryMax = 100;          // commands remembered per session
inline constexpr size_t kExportedEnvMax = 1 << 20;  // larger environments are not carried over
using corral::ShellQuote;                           // base/shell_quote.h
// The text handed to the shell's eval for `r` (exec_dir and env folded in).
std::string BuildScript(const CommandRequest& r);

struct SessionCore {
  explicit SessionCore(SessionOptions o);

  void ShellLoop();  // the shell thread
  // The shell's exec: in a slot of opt.slots when one is ready, else the normal way.
  Result<runtime::RunOutcome> StartShell(const runtime::ExecRequest& req);
  void ControlLoop();  // the control thread
  Result<std::string> Submit(CommandRequest request);
  void Await(const std::string& command_id, SteadyTime deadline, ShellSession::Callback cb);
  CommandState Latest() const;
  bool KillRunning();
  void SetNoChangeTimeout(double seconds);
  void Close(bool hard);
  bool CloseIfIdle(std::chrono::system_clock::time_point used_before, bool unused_counts);

  // --- called with mu held ---
  void Wake();
  void CloseLocked(bool hard);
  CommandState* Find(const std::string& command_id);
  void StartNext();
  void Finish(CmdStatus status_if_running, std::optional<int> exit_code);
  void KillTree();
  void ReadPipes(bool* changed);
  void CheckHandshake();
  void CheckMarker();
  void CheckTimers(SteadyTime now);
  void HandleShellExit();
  void FailQueued(const std::string& why);
  int PollTimeoutMs(SteadyTime now) const;
  void CollectDue(SteadyTime now,
                  std::vector<std::pair<ShellSession::Callback, CommandState>>* due);

  struct Pending {
    std::string id;
    CommandRequest request;
  };
  struct Waiter {
    std::string command_id;
    SteadyTime deadline;
    ShellSession::Callback cb;
  };

  SessionOptions opt;
  const std::chrono::system_clock::time_point created_at = std::chrono::system_clock::now();

  mutable std::mutex mu;
  std::condition_variable shell_cv;  // the shell thread waits here between incarnations
  std::deque<Pending> queue;
  std::deque<CommandState> history;  // newest at the back; the running one is the back
  std::vector<Waiter> waiters;
  std::chrono::system_clock::time_point last_used_at = created_at;
  size_t commands_run = 0;
  std::string cwd;  // last known working directory (from the markers)
  // `declare -px` after the last completed command: what a restarted shell re-exports.
  std::string exported_env;

  // The running command.
  bool running = false;
  std::string running_id;
  std::string marker;
  SteadyTime last_change{};
  SteadyTime hard_deadline = SteadyTime::max();
  double cmd_no_change = 120;
  std::set<ProcId> keep;  // the shell's children when it started (earlier background jobs)
  std::optional<CmdStatus> ending;  // a timeout or kill was decided; the tree is being killed
  SteadyTime escalate_at = SteadyTime::max();
  int kill_rounds = 0;

  // The current shell (one incarnation).
  bool incarnation = false;  // pipes handed over by the shell thread
  bool ready = false;        // handshake seen
  std::string nonce;
  pid_t shell_pid = 0;  // in the sandbox
  uint64_t shell_start = 0;
  pid_t init_pid = 0;
  uint64_t init_ticks = 0;
  std::optional<SandboxProcs> procs;
  UniqueFd cmd_w, out_r, err_r;  // our ends
  UniqueFd interrupt_w;          // one byte = a stop request for the whole exec
  std::string out_buf, err_buf, write_buf;
  bool shell_exited = false;  // set by the shell thread
  std::optional<int> shell_exit_code;
  bool exit_handled = true;  // the control thread has dealt with the last exit

  bool closing = false;
  bool hard_close = false;
  bool shell_done = false;    // the shell thread has returned for good
  bool control_done = false;  // the control thread has answered everyone and returns
  std::string dead_reason;    // why no shell can run (then Submit fails)

  UniqueFd wake;  // eventfd: wakes the control thread
  std::thread shell_thread, control_thread;
};

struct ShellSession::Impl {
  std::shared_ptr<SessionCore> core;
};

}  // namespace corral::runtime::sessions
