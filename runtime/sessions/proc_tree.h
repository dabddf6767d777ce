// Stopping one command's process tree inside a persistent sandbox, from the host, without
// touching the session's shell or what earlier commands left running in the background.
//
// Works through the sandbox's own procfs (/proc/<init>/root/proc, opened with openat2 in
// the sandbox's root and checked to be procfs), so pids are the sandbox's: the shell
// reports its $$ and we compare like with like. Signals go through fds of /proc/<pid>
// directories (pidfd_send_signal accepts them), opened and then checked against the start
// time seen in the scan, so a recycled pid is never signalled.
//
// A session's shell is a child subreaper (runtime/sessions/session_core.cc), so what a command
// orphans — a double fork, `setsid sh -c 'cmd &'` — is reparented to the shell and shows
// up here as one of its new children, not as a child of the sandbox's init.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime::sessions {

// A process by (pid in the sandbox, start time in clock ticks since boot).
using ProcId = std::pair<pid_t, uint64_t>;

class SandboxProcs {
 public:
  // The procfs of the sandbox whose init is `init_pid` (host pid) started at `init_ticks`.
  static Result<SandboxProcs> Open(pid_t init_pid, uint64_t init_ticks);

  // The direct children of `parent` (a sandbox pid).
  std::set<ProcId> ChildrenOf(pid_t parent) const;
  // Start time of `pid`, or nullopt when it is gone.
  std::optional<uint64_t> StartOf(pid_t pid) const;

  // Kills every descendant of `shell` except the subtrees of `keep` (children of the
  // shell that existed before the command started): stops them all (SIGSTOP, repeated
  // until no new process appears, so nothing forks away), then SIGKILLs them. Returns how
  // many processes were killed.
  size_t KillCommandTree(pid_t shell, const std::set<ProcId>& keep) const;

  // SIGKILL to one process, if it is still the one identified by `id`.
  bool Signal(const ProcId& id, int signo) const;

 private:
  UniqueFd proc_;  // the sandbox's /proc
};

}  // namespace corral::runtime::sessions
