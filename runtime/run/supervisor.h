// RunJail(): the whole path of one command — validate, create the cgroup, plan, spawn,
// wait with the wall-clock deadline while draining output under the caps, kill the whole
// tree, collect the figures, clean up — returning a RunOutcome.
//
// Parent side. While it runs, SIGINT/SIGTERM/SIGHUP to the calling process are taken
// over: they stop the jail (and are reported in RunOutcome::interrupted_by).
#pragma once

#include <functional>
#include <optional>

#include "base/result.h"
#include "jail/plan.h"
#include "jail/spawn.h"
#include "runtime/net/netproxy_launch.h"
#include "runtime/run/jail_cgroup.h"
#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

class JailSpawner;

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

// Errors are corral's own failures before a jail exists (invalid spec, no cgroup where one
// is required, ...). A jail whose setup failed is an outcome (status kSetupFailed).
Result<RunOutcome> RunJail(const JailSpec& spec, const RunOptions& options);

// RunJail in two halves, for a pool of jails built before their commands are known
// (runtime/pool/jail_pool.h). PrepareJail does everything but the command: validate, cgroup
// with limits, plan, clone, and the child builds the root and then waits. Destroying the
// PreparedJail kills it and removes its cgroup. RunPrepared hands it the command of
// `spec` (argv, env, working directory, timeout and output limit; everything else must be
// what the jail was prepared with: the caller checks) and supervises it like RunJail.
// A prepared jail runs one command, once.
// In network.mode allowlist PrepareJail first starts the jail's own corral-netproxy on a
// new network namespace (as RunJail does) and the jail joins it, so its proxy and
// resolver are up before any command arrives; RunPrepared ends it after the command and
// puts its summary in the outcome. One proxy per jail: its decision log lines and its
// summary are that jail's alone.
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
Result<JailBlueprint> MakeBlueprint(const JailSpec& spec);
// With a spawner (runtime/run/jail_spawner.h, started from this blueprint) the clone happens
// there (SpawnWaitingJail); the cgroup and an allow-list jail's proxy are made here either
// way (the proxy is then a child of the calling thread, which must outlive the jail's use:
// it dies with that thread at the latest).
Result<PreparedJail> PrepareJail(const JailBlueprint& blueprint, JailSpawner* spawner = nullptr);
// What a jail needs of its cgroup: the clone3 target (v2; -1 on v1) and the cgroup.procs
// files the child writes itself into where there is none.
struct CgroupFds {
  int clone_into = -1;
  std::vector<int> attach;
};
CgroupFds FdsOf(const cgroups::Cgroup* cgroup);  // none for a null cgroup
// PrepareJail's clone: host dirs, plan, and a jail that waits for its command on /dev/null,
// in `cgroup`. clone_parent: as a child of our parent (the spawner's owner). net_ns_fd:
// the network namespace the jail joins (its proxy's, network.mode allowlist, where it is
// required); -1 for a new one.
Result<jail::JailProcess> SpawnWaitingJail(const JailSpec& spec, const CgroupFds& cgroup,
                                           bool clone_parent, int net_ns_fd = -1);
Result<RunOutcome> RunPrepared(PreparedJail jail, const JailSpec& spec, const RunOptions& options);

}  // namespace corral::runtime
