// RunJail(): the whole path of one command — validate, create the cgroup, plan, spawn,
// wait with the wall-clock deadline while draining output under the caps, kill the whole
// tree, collect the figures, clean up — returning a RunOutcome.
//
// Parent side. While it runs, SIGINT/SIGTERM/SIGHUP to the calling process are taken
// over: they stop the jail (and are reported in RunOutcome::interrupted_by).
//
// The API only; its types (RunOptions, PreparedJail, JailBlueprint, CgroupFds) are in
// runtime/run/run_types.h.
#pragma once

#include "base/result.h"
#include "jail/plan.h"
#include "jail/spawn.h"
#include "runtime/run/run_types.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

class JailSpawner;

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
// JailBlueprint and PreparedJail: runtime/run/run_types.h.
Result<JailBlueprint> MakeBlueprint(const JailSpec& spec);
// With a spawner (runtime/run/jail_spawner.h, started from this blueprint) the clone happens
// there (SpawnWaitingJail); the cgroup and an allow-list jail's proxy are made here either
// way (the proxy is then a child of the calling thread, which must outlive the jail's use:
// it dies with that thread at the latest).
Result<PreparedJail> PrepareJail(const JailBlueprint& blueprint, JailSpawner* spawner = nullptr);
CgroupFds FdsOf(const cgroups::Cgroup* cgroup);  // none for a null cgroup
// PrepareJail's clone: host dirs, plan, and a jail that waits for its command on /dev/null,
// in `cgroup`. clone_parent: as a child of our parent (the spawner's owner). net_ns_fd:
// the network namespace the jail joins (its proxy's, network.mode allowlist, where it is
// required); -1 for a new one.
Result<jail::JailProcess> SpawnWaitingJail(const JailSpec& spec, const CgroupFds& cgroup,
                                           bool clone_parent, int net_ns_fd = -1);
Result<RunOutcome> RunPrepared(PreparedJail jail, const JailSpec& spec, const RunOptions& options);

}  // namespace corral::runtime
