// The types of running one command (runtime/run/supervisor.h is the API that takes them):
// the caller's options and the parts of a jail prepared ahead. Apart from the API so that
// the supervisor's own pieces (stdio.h, watch.h, jail_spawner.h) include the types without
// including the supervisor, which includes them.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "jail/spawn.h"
#include "runtime/net/netproxy_launch.h"
#include "runtime/run/jail_cgroup.h"
#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

struct RunOptions {
  // true: stdout/stderr go through pipes into bounded captures (RunOutcome::*_stream).
  // false: the command writes straight to the caller's stdout/stderr.
  bool capture_output = false;
  // true: the command reads the caller's stdin; false: /dev/null.
  bool pass_stdin = false;
  // true: the command gets a pty of the jail's own devpts as its stdio (runtime/run/pty.h);
  // its output goes raw to stdout_fd, stdin_fd is copied into it with pass_stdin (and a
  // terminal there is put in raw mode). Not with capture_output, nor in a prepared jail or
  // an exec slot (RunPrepared/ExecInSlot refuse it): the command must open the pty itself.
  bool tty = false;
  // The caller's stdio: what the command gets when output is not captured / stdin is
  // passed. A pool server (runtime/pool/pool_server.h) puts its client's fds here.
  int stdin_fd = 0;
  int stdout_fd = 1;
  int stderr_fd = 2;
  // true (an exec into a persistent sandbox): a pipe or socket given as stdout/stderr is
  // relayed rather than handed over, so that what the exec leaves running in the background
  // cannot hold the caller's pipe open once the exec has returned (`out=$(corral exec NAME
  // -- sh -c 'server &')` returns, as with docker exec). A one-shot run needs none: its
  // whole tree ends with it.
  bool relay_pipes = false;
  // >= 0: stop requests come from this stream instead of corral's own SIGINT/SIGTERM/
  // SIGHUP, and the signal mask is left alone: one byte is the number of the signal the
  // requester received; EOF means the requester is gone (reported as SIGHUP).
  int interrupt_fd = -1;
  // Set: called with the outcome as soon as it is known — the command has exited, every
  // process of the jail has been sent SIGKILL, its output is drained, its figures are
  // read — and before the teardown (the init's and the namespaces' exit, the cgroup's
  // removal), which still completes before the run returns. A server answers its client
  // here. Only for jails with a PID namespace and a cgroup; otherwise it is called after
  // the teardown.
  std::function<void(const RunOutcome&)> on_outcome;
};

// A jail prepared ahead of its command (PrepareJail, runtime/run/supervisor.h).
struct PreparedJail {
  // Declared first, so destroyed last: the proxy ends after the jail that used it.
  std::optional<net::NetworkService> network;
  JailCgroup cgroup;
  jail::JailProcess process;
};
// What the jails of one spec share, worked out once by MakeBlueprint: the spec validated,
// the cgroup parent opened (OpenCgroupParent). Read-only: jails may be prepared from one
// blueprint on several threads at once.
struct JailBlueprint {
  JailSpec spec;
  CgroupParent cgroups;
};

// What a jail needs of its cgroup: the clone3 target (v2; -1 on v1) and the cgroup.procs
// files the child writes itself into where there is none.
struct CgroupFds {
  int clone_into = -1;
  std::vector<int> attach;
};

}  // namespace corral::runtime
