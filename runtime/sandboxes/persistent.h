// Persistent sandboxes: create once, exec many times, background processes live on.
//
// A persistent sandbox is a jail whose init (PID 1, jail/child.cc in InitMode::kPersistent)
// holds the namespaces and the root and reaps orphans, in a sandbox-wide cgroup
// "sbx-<name>" carrying the limits. Each exec runs in a leaf of its own,
// "sbx-<name>/exec-<pid>-<n>", so an exec's timeout can kill exactly that exec's tree. The
// init lives in "sbx-<name>" itself (on v2 the exec cgroups then have no controllers of
// their own: cgroups/cgroup.h, CreateChild), so an idle sandbox is one cgroup. The init survives
// the corral that created it; the record in runtime/sandboxes/sandbox_store.h lets later
// invocations find it.
//
// Idle timeouts are enforced lazily: every create/exec/ps/rm (and `corral reap`) removes
// sandboxes whose last exec is older than their idle timeout. There is no daemon to do it
// in between.
// Parent side.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "cgroups/cgroup.h"
#include "jail/plan.h"
#include "jail/spawn.h"
#include "runtime/net/policy.h"
#include "runtime/run/outcome.h"
#include "runtime/run/supervisor.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

struct CreateRequest {
  JailSpec spec;                    // argv is ignored
  std::string name;                 // empty: the generated id is the name
  double idle_timeout_seconds = 0;  // 0 = never
  // network.mode allowlist: endpoints the proxy never reaches (the daemon's own API).
  std::vector<std::pair<net::IpAddress, uint16_t>> network_never;
  // A snapshot's tag (runtime/sandboxes/workspace_snapshot.h): the workspace starts as the
  // snapshot's, its layers under a new upper layer (spec.workspace_overlay is implied;
  // user_data_dir defaults to the snapshot's and may not be another).
  std::string from_snapshot;
};

// Where a persistent sandbox's proxy keeps its running summary (network.mode allowlist).
std::string NetworkSummaryPath(const std::string& name);

Result<SandboxRecord> CreateSandbox(const CreateRequest& request);
// 12 random hex digits: a new sandbox's id (and its name when none is given).
std::string NewSandboxId();

struct ExecRequest {
  std::string sandbox;  // name or id
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // this exec only
  std::optional<std::string> workdir;
  std::optional<double> timeout_seconds;      // default: the sandbox's limits.timeout
  std::optional<int64_t> output_limit_bytes;  // captured stdout/stderr, each; default: the
                                              // sandbox's limits.output
  RunOptions io;
  // The command becomes a child subreaper (jail/enter.h): what it orphans stays in its
  // tree, where a caller that ends its commands' trees can find it.
  bool child_subreaper = false;
};

// Errors: the sandbox does not exist, or is dead (its init is gone) — never a hang.
// An exec is use: it refreshes the sandbox's last-used time before any idle sweep runs,
// so it never reaps the sandbox it was asked to run in.
Result<RunOutcome> ExecInSandbox(const ExecRequest& request);

// A hold on a live persistent sandbox. While one exists, in any process, the idle reaper
// leaves the sandbox alone (it holds the store's lock shared, as an exec does); `rm`
// still removes it. Taking one counts as use: the last-used time becomes now. The agent
// tools' jail provider holds one for as long as it serves a thread's sandbox.
struct SandboxHold {
  SandboxRecord record;  // as found once the lock was held
  UniqueFd lock;
};
// kNotFound when no sandbox has that name or id, or it died (its init is gone) or was
// removed while we waited for the lock. The message names the sandbox, not host paths.
Result<SandboxHold> HoldSandbox(const std::string& name_or_id);
// Marks the sandbox as used now (for `ps` idle times and the idle reaper).
void TouchSandbox(const std::string& name);

// An exec slot, for a long-lived caller (the pool server): a process already inside the
// sandbox's namespaces and in an exec cgroup of its own (on cgroup v1 that join, an RCU
// grace period, is the bulk of an exec's latency), still privileged and not yet
// hardened, waiting for its command. Used once; destroying it kills it and removes its
// cgroup. Its parent-death signal is tied to the thread that prepared it.
struct ExecSlot {
  SandboxRecord record;
  UniqueFd init_pidfd;  // the sandbox's init, checked against the record when opened
  std::unique_ptr<cgroups::Cgroup> exec_cg;  // removed with the slot unless an exec left
                                             // background processes in it
  jail::JailPlan plan;
  bool child_subreaper = false;  // set at the slot's entry: only such an exec may use it
  jail::JailProcess process;     // destroyed first: killed and reaped if still waiting
};
struct ExecSlotOptions {
  // The command becomes a child subreaper (ExecRequest::child_subreaper). Set when the
  // slot enters, so an exec that asks otherwise cannot use the slot.
  bool child_subreaper = false;
  // Landlock and seccomp only once the command comes (jail/enter.h late_hardening): for a
  // sandbox that may still be claimed, whose mounts change then.
  bool late_hardening = false;
};
Result<std::unique_ptr<ExecSlot>> PrepareExecSlot(const std::string& sandbox,
                                                  const ExecSlotOptions& options = {});
// Runs `request` (request.sandbox must name the slot's sandbox) in the slot, exactly as
// ExecInSandbox would, hardening included. nullopt with *unusable set when the slot cannot
// be used (it died, or its sandbox did: removed, or replaced by one with a new init; the
// command is too large to hand over; its child_subreaper differs from the request's): run
// the exec the normal way.
Result<std::optional<RunOutcome>> ExecInSlot(std::unique_ptr<ExecSlot> slot,
                                             const ExecRequest& request, std::string* unusable);

// The cgroups that a create of sandbox `name` (with `cgroups`, its spec's) made before
// writing its record, when that create was killed on the way (a daemon's kill -9): killed
// and removed. None there is no error.
Status RemoveUnrecordedCgroups(const std::string& name, const CgroupSpec& cgroups);

// Kills everything inside, removes the cgroups and the record. The sandbox's mounts live
// only in its mount namespace, which the kernel frees with its last process. A sandbox
// whose record cannot be read is removed by its name: its cgroups (and what runs in them)
// and its directory.
Status RemoveSandbox(const std::string& name_or_id);

struct SandboxInfo {
  SandboxRecord record;
  // The recorded init still runs (same pid, same start time), and the sandbox is not
  // frozen by a removal that was cut short (that one is dead: `corral rm` finishes it).
  bool alive = false;
  double age_seconds = 0;
  double idle_seconds = 0;
  // Paused (runtime/sandboxes/pause.h) for this long; nullopt when not paused.
  std::optional<double> paused_seconds;
  std::optional<cgroups::Stats> stats;  // sandbox-wide
  size_t processes = 0;
};

// What an inspection reads: the cgroup's figures (stats, processes; most of its cost, a few
// files per hierarchy) or only whether the sandbox lives (a daemon adopting thousands).
enum class Inspect { kFigures, kLiveness };

// Records that cannot be read are left out, and named in `unreadable` when given
// (`corral rm NAME` removes such a sandbox).
std::vector<SandboxInfo> ListSandboxes(std::vector<UnreadableRecord>* unreadable = nullptr,
                                       Inspect what = Inspect::kFigures);
Result<SandboxInfo> InspectSandbox(const std::string& name_or_id, Inspect what = Inspect::kFigures);

// Removes sandboxes idle longer than their idle timeout; returns their names.
std::vector<std::string> ReapIdleSandboxes();

}  // namespace corral::runtime
