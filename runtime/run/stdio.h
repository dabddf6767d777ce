// The command's stdio, and what of the caller's stdio the jail may be given.
//
// The jail never gets a caller's fd that shows a host path or reaches a terminal:
//  - pipes, sockets, anonymous inodes and /dev/null, zero, full, random, urandom are given
//    as they are (their /proc/self/fd link names nothing of the host; nothing changes for
//    `corral run ... | cmd`, not even a copy);
//  - a terminal is relayed: the command writes into a pipe and its output reaches the
//    terminal through a TerminalFilter (runtime/run/terminal_filter.h), so it cannot drive
//    it (OSC 52, titles, ...), TIOCSTI into it or learn its /dev/pts path;
//  - anything else — a regular file, a named FIFO, a directory, a device — is relayed raw
//    through a pipe: `readlink /proc/self/fd/1` inside shows pipe:[N], not the host path.
//    The same for stdin (-i): a file or a terminal is copied into a pipe.
// With a real terminal on request (RunOptions::tty) the command gets a pty of the jail's
// own devpts instead (runtime/run/pty.h). The relays are pumped by the wait loop
// (runtime/run/watch.h). Parent side.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/fd_pair.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/run/run_types.h"
#include "runtime/run/terminal_filter.h"

namespace corral::runtime {

enum class CallerFdKind {
  kGiven,     // passed to the jail as it is
  kTerminal,  // relayed through a TerminalFilter
  kHostPath,  // relayed raw: its /proc/self/fd link would show a host path
  // A pipe or socket relayed raw for an exec (RunOptions::relay_pipes), so that what the
  // exec leaves running cannot hold it open.
  kHeldPipe,
};
// `relay_pipes`: a pipe or socket is kHeldPipe rather than kGiven (an exec's output).
CallerFdKind ClassifyCallerFd(int fd, bool relay_pipes = false);

// Where one relayed output stream goes: the caller's fd, filtered if it is a terminal.
struct OutputRelay {
  int dest = -1;
  std::optional<TerminalFilter> filter;
  // A raw relay moves the bytes from the pipe with splice(2), without copying them
  // through corral; cleared when the destination cannot take it (O_APPEND, some devices).
  bool splice = false;
  // Writes all of it (blocking, as the command's own write would have).
  void Write(const char* data, size_t size);
  // One splice from `pipe` to dest: true while there may be more, false at EOF or a hard
  // error, nullopt when splice does not work here (then read and Write instead).
  std::optional<bool> Splice(int pipe);
  void Finish();  // end of stream: the filter's last bytes
};

// The caller's stdin copied into the command's: a pipe's write end or a pty master.
struct InputRelay {
  int source = -1;  // the caller's stdin
  UniqueFd sink;    // O_NONBLOCK
  std::string pending;
  size_t offset = 0;
  bool eof_as_eot = false;  // a pty: EOF on the source is typed as ^D
  // One step each; false once the relay is done (source at EOF and all written, or the
  // command's side gone).
  bool ReadSource();
  bool WriteSink();
  bool wants_source() const { return source >= 0 && offset == pending.size(); }
  bool wants_sink() const { return sink.valid() && offset < pending.size(); }
};

// The command's stdio: /dev/null or the caller's stdin; capture pipes, relay pipes or the
// caller's stdout/stderr; or a pty.
struct Stdio {
  UniqueFd dev_null;
  Pipe in;   // stdin relay
  Pipe out;  // capture or relay of stdout (pty: out.read is the master)
  Pipe err;  // capture or relay of stderr; unused when stdout's pipe takes both
  bool capture = false;
  bool pass_stdin = false;
  bool shared_pipe = false;  // stdout and stderr are one file: one relay keeps their order
  bool relay_pipes = false;  // RunOptions::relay_pipes
  int caller_stdin = 0;      // RunOptions::stdin_fd ...
  int caller_stdout = 1;
  int caller_stderr = 2;
  std::optional<OutputRelay> out_relay;
  std::optional<OutputRelay> err_relay;
  std::optional<InputRelay> in_relay;
  // RunOptions::tty: the socket the command sends its pty master on (jail/terminal.cc),
  // then the session (raw mode, window size) once the master is here.
  Pipe tty_socket;  // read: ours; write: the command's stdin/stdout/stderr until the pty
  std::unique_ptr<struct PtySession> pty;

  Stdio() = default;
  Stdio(Stdio&& other) noexcept;
  Stdio& operator=(Stdio&& other) noexcept;
  ~Stdio();

  int child_stdin() const;
  int child_stdout() const;
  int child_stderr() const;
  // After spawning: our copies of the child's ends would keep the pipes open forever.
  void CloseChildEnds();
  // Flushes the relays' filters (end of the run).
  void FinishRelays();
};
Result<Stdio> MakeStdio(const RunOptions& options);

}  // namespace corral::runtime
