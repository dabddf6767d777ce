// The Landlock part of Plan(): whether a jail gets Landlock (spec.landlock against the
// running kernel's ABI), and its rules, derived from the jail's own mount list:
//   - the root (read-only): list directories;
//   - a read-only bind or tmpfs: read, and execute unless it is noexec;
//   - a read-write bind or tmpfs (/mnt/user-data, /tmp, /home/sandbox, /dev/shm, -v ...:rw):
//     read, write, create, remove, rename (refer), truncate, and execute unless noexec;
//   - /dev's nodes and /dev/pts: read, write, truncate, ioctl (terminals);
//   - /proc: read and write (its own read-only parts stay read-only by mount);
//   - generated files in the root: read.
// Making a mount point read-only after the fact (/dev) takes the write rights back from its
// rule. Rules already covered by a rule above them are dropped (fewer syscalls per start).
// TCP: allowlist -> connect to the in-jail proxy and resolver ports and the allow rules'
// ports only, no bind; none (only the jail's own loopback) and host -> not fenced; and not at
// all with landlock.tcp: false.
// Parent side: runs in the planner; the child only applies the result (jail/landlock.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "jail/landlock.h"
#include "jail/plan.h"
#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// The running kernel's Landlock ABI (0 if none; *err then says why), probed once.
int HostLandlockAbi(int* err);

// Whether and how `spec` gets Landlock on a kernel with `abi` (0: none, `err` why), without
// rules: enforce, handled rights, TCP ports, or the reason it is off. An error when
// landlock.enabled is true and the kernel cannot give it.
Result<jail::LandlockPlan> DecideLandlock(const JailSpec& spec, int abi, int err);

// The path rules for a jail built by `mounts` (paths under `staging_dir`), leaving out the
// mounts at the jail paths in `omit` (landlock.omit), masked to `handled_fs`.
std::vector<jail::LandlockPathRule> LandlockRules(const std::vector<jail::MountOp>& mounts,
                                                  const std::string& staging_dir,
                                                  bool read_only_root,
                                                  const std::vector<std::string>& omit,
                                                  uint64_t handled_fs);

// DecideLandlock with the host's ABI, plus the rules of plan->mounts, into plan->landlock.
Status AddLandlock(const JailSpec& spec, jail::JailPlan* plan);

// What a run reports about it (RunOutcome::landlock).
LandlockOutcome LandlockOutcomeOf(const jail::LandlockPlan& plan);
// The same decided from the spec alone (a prepared jail's run: the plan was made earlier,
// from the same spec, on the same kernel).
LandlockOutcome LandlockOutcomeFor(const JailSpec& spec);
// The whole plan (for a persistent sandbox's record: its execs get the create's rules),
// and back (a malformed value gives a plan that does not enforce, with the reason).
nlohmann::json LandlockPlanToJson(const jail::LandlockPlan& plan);
jail::LandlockPlan LandlockPlanFromJson(const nlohmann::json& j);

}  // namespace corral::runtime
