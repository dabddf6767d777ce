// One persistent shell session (the AIO API's shell and bash sessions are these): a
// long-lived, non-interactive `bash` (no prompt, no echo) inside the sandbox's persistent
// corral jail, so `cd` and `export` in one command hold in the next.
//
// Protocol. The shell runs a small loop (kSessionScript) that reads, from its stdin socket,
// the command and then a random per-command marker, each NUL-terminated (commands cannot
// hold NUL: the request layer refuses it; the marker is read only after the command ran,
// so the command never sees it), runs the command with `eval` in a function (stdin
// /dev/null, the control fds closed; a SIGUSR1 trap returns from that function, which is
// how a timeout aborts the rest of a command list or a builtin loop), then prints
// "\n<marker> <status> <cwd>\n" on its own saved stdout.
// Output is read until that line; the marker is 128 random bits, so a command's output
// cannot end a call by accident. stderr joins stdout on one pipe (as a terminal shows it),
// or has a pipe of its own (bash sessions: stdout and stderr are reported apart).
//
// Threads (per session, 2): the *shell thread* calls runtime::ExecInSandbox and blocks in
// it while the shell lives (the jail process's parent-death signal is tied to this thread,
// so it lives exactly as long as the shell; it restarts the shell, in the last working
// directory, if a command ends it with `exit N`). The *control thread* polls the pipes,
// cuts output at markers, enforces no_change_timeout and hard_timeout (killing the
// command's tree, runtime/sessions/proc_tree.h, never the shell or earlier background jobs;
// the shell itself only if the command was a shell builtin that will not stop), and calls
// the waiters' callbacks. Callbacks run on the control thread and must not block.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace corral::runtime {
class ExecSlotKeeper;
}

namespace corral::runtime::sessions {

using SteadyTime = std::chrono::steady_clock::time_point;

enum class CmdStatus { kRunning, kCompleted, kNoChangeTimeout, kHardTimeout, kTerminated };
// "running", "completed", "no_change_timeout", "hard_timeout", "terminated".
const char* CmdStatusName(CmdStatus status);

// What a command did so far (or in the end).
struct CommandState {
  std::string command_id;
  std::string command;
  CmdStatus status = CmdStatus::kRunning;
  std::string output;  // stdout (and stderr when they share a pipe)
  std::string errors;  // stderr, when separate
  std::optional<int> exit_code;
  std::string cwd;      // the shell's working directory when the command started
  bool exists = false;  // false: the session has run no command yet
};

struct CommandRequest {
  std::string command;
  std::optional<std::string> exec_dir;                   // cd there first (if it exists)
  std::vector<std::pair<std::string, std::string>> env;  // for this command only
  std::optional<double> no_change_timeout;               // seconds; else the session's
  std::optional<double> hard_timeout;                    // seconds; none by default
};

struct SessionOptions {
  std::string corral_name;  // the persistent sandbox
  std::string id;
  bool separate_stderr = false;
  std::optional<std::string> workdir;  // initial; else the sandbox's default
  double no_change_timeout = 120;
  size_t max_output_bytes = 8 * 1024 * 1024;  // kept per command; the rest is dropped
  // Where the shell's exec takes a slot prepared ahead (server.session_slots); null: none.
  runtime::ExecSlotKeeper* slots = nullptr;
};

class ShellSession {
 public:
  using Callback = std::function<void(const CommandState&)>;

  // Starts the threads; the shell comes up asynchronously (commands queue meanwhile).
  static std::shared_ptr<ShellSession> Start(SessionOptions options);
  ~ShellSession();  // Close(false); joins the threads (detaches them if called on one)

  const std::string& id() const;
  bool separate_stderr() const;

  // Queues `request`; returns its command id. Commands of one session run one at a time
  // in order. Error when the session is closed or its shell cannot run.
  Result<std::string> Submit(CommandRequest request);
  // Calls `cb` once: when the command `command_id` (empty: the newest) is no longer
  // running, or at `deadline` with its state then, whichever comes first.
  void Await(const std::string& command_id, SteadyTime deadline, Callback cb);
  // The newest command's state (exists=false if none).
  CommandState Latest() const;
  // Recent commands, oldest first (the console records).
  std::vector<CommandState> History() const;
  // Kills the running command's tree; it ends as kTerminated. False if none was running.
  bool KillRunning();
  void SetNoChangeTimeout(double seconds);
  double no_change_timeout() const;
  bool busy() const;
  std::string working_dir() const;
  std::chrono::system_clock::time_point created_at() const;
  std::chrono::system_clock::time_point last_used_at() const;
  size_t commands_run() const;

  // Ends the session. hard=false: the running command's tree is killed, the shell gets
  // EOF and exits; background processes it started live on. hard=true: SIGKILL to the
  // shell. Every waiter is answered. Returns at once; the destructor joins.
  void Close(bool hard);
  // Close(false), but only if the session is idle: no command running or queued, and last
  // used (a command submitted or ended, or the session made) before `used_before`. One that
  // has had no command yet counts as idle only if `unused_counts` (false: a session just
  // made for a call that has yet to submit its command is never taken from under it).
  // Checked and done under the session's own lock, so a Submit cannot slip in between the
  // check and the close (it is either refused, or makes the session busy first).
  // True if the session is closed now (by this call or before).
  bool CloseIfIdle(std::chrono::system_clock::time_point used_before, bool unused_counts);
  bool closed() const;
  // Both threads are done (after Close, or when the shell could not run): destroying the
  // session now does not block.
  bool finished() const;

  struct Impl;

 private:
  explicit ShellSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// 128 random bits as 32 hex digits.
std::string RandomHex();
// A random UUID version 4 ("8-4-4-4-12" hex).
std::string RandomUuid();

}  // namespace corral::runtime::sessions
