// A real terminal for the command (`corral exec -it`, `corral run -t`): the parent's side.
//
// The pty comes from the jail's own devpts: the command opens /dev/ptmx inside the jail
// (jail/terminal.cc: after its identity is set, before seccomp), so the slave is
// /dev/pts/N of the jail, owned by the sandbox user; it sends the master here over the
// socket it was given as stdio (Stdio::tty_socket) and waits for one byte, sent once the
// window size is set, so that it never starts at 0x0. The master is then pumped by the
// wait loop (runtime/run/watch.h): its output raw to the caller's stdout (the operator
// asked for a terminal: no filter), the caller's stdin into it (with -i), SIGWINCH
// forwarded as TIOCSWINSZ.
// With -i and a terminal on stdin, that terminal is put in raw mode for the run; it is
// restored when the session ends, which every way out of a run passes (corral's stop
// signals arrive through a signalfd and end the run normally).
// Parent side, single-threaded (it changes the signal mask of the calling thread).
#pragma once

#include <signal.h>
#include <termios.h>

#include <optional>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/run/stdio.h"

namespace corral::runtime {

struct PtySession {
  int master = -1;     // Stdio::out.read
  int size_from = -1;  // the caller's terminal whose size the pty follows, or -1
  int raw_fd = -1;     // the caller's terminal put in raw mode, or -1
  std::optional<termios> saved;
  UniqueFd winch;  // signalfd of SIGWINCH
  sigset_t old_mask;

  PtySession() = default;
  PtySession(const PtySession&) = delete;
  PtySession& operator=(const PtySession&) = delete;
  ~PtySession();  // restores the terminal and the signal mask
  // Copies the caller's terminal size onto the pty (and so SIGWINCH to its foreground).
  void Resize() const;
  // A SIGWINCH arrived on `winch`: take it and resize.
  void OnWinch() const;
};

// Waits for the command's master on io.tty_socket (or for `pidfd` — the jail's process —
// to exit: the command failed before it had a terminal, and the run's outcome says why).
// Then: window size, the go-ahead byte, raw mode if asked, io.out.read = the master and,
// with pass_stdin, io.in_relay into it. An error only for corral's own failures.
Status AcceptTerminal(Stdio& io, int pidfd, bool raw);

}  // namespace corral::runtime
