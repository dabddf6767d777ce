// Plan(): turns a validated JailSpec into a jail::JailPlan — clone flags, the ordered list
// of mount operations for the fresh root (with bind sources already opened as detached
// mount trees), generated /etc files, ids, rlimits, argv/envp and the compiled seccomp
// filter. Nothing is looked up after this; the jail child only reads the plan.
//
// Runs in the parent. Reads host files (the curated /etc snapshot, the current rlimits)
// but changes nothing on the host; PrepareHostDirs() is the one step that does.
#pragma once

#include <string>

#include "base/result.h"
#include "jail/command.h"
#include "jail/plan.h"
#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// Paths inside the jail (DeerFlow's virtual path contract).
inline constexpr const char* kSkillsPath = "/mnt/skills";
inline constexpr const char* kUserDataPath = "/mnt/user-data";
inline constexpr const char* kWorkspacePath = "/mnt/user-data/workspace";
inline constexpr const char* kAcpWorkspacePath = "/mnt/acp-workspace";
inline constexpr const char* kSandboxHome = "/home/sandbox";
inline constexpr const char* kSandboxUserName = "sandbox";

// Creates what the spec's agent mounts need on the host: the user-data directory and its
// workspace/, uploads/, outputs/ (owned by the jail's uid/gid when created here, so the
// command can write them). Existing directories are left as they are.
Status PrepareHostDirs(const JailSpec& spec);

// The spec must have passed Validate().
Result<jail::JailPlan> Plan(const JailSpec& spec);

// The command part of a plan alone (argv, envp with its PATH, working directory), for a
// prepared jail that learns its command late (jail/command.h).
jail::DeferredCommand CommandFor(const JailSpec& spec);

// For an exec into a persistent sandbox: the command's identity, limits, argv/envp and
// seccomp filter only — the namespaces and root already exist. Its Landlock rules are the
// sandbox's, from its record (the caller sets plan.landlock).
Result<jail::JailPlan> PlanExec(const JailSpec& spec);

// Human-readable list of every way the spec weakens corral's default isolation (disabled
// namespaces, unsafe: opt-ins), for the start-up log and RunOutcome::warnings.
// `limits_said`: the cgroup set-up already said which limits it skipped (its own warning),
// so unsafe.allow_missing_limits is not repeated in general terms.
std::vector<std::string> WeakenedIsolation(const JailSpec& spec, bool limits_said = false);

// Hints about mounts that will not work as the user likely means: a read-write mount of a
// directory the sandbox's uid cannot write to. Reads the host (stat); warnings, not errors.
std::vector<std::string> MountHints(const JailSpec& spec);
// What a persistent sandbox's create warns about (its log, the daemon's 201 response):
// WeakenedIsolation, then MountHints. Not as root, allow_missing_limits is left to the
// cgroup set-up, which says itself which limits it skips.
std::vector<std::string> SandboxWarnings(const JailSpec& spec);

// MountHints into an outcome's warnings, counted in unwritable_mounts (so that a command
// refused a write there is told that fix, not to try --landlock off). Each run and each
// exec says it again: the mount stays unwritable until the host's owner changes it.
void AddMountHints(const JailSpec& spec, RunOutcome* outcome);

// A rootless jail without a cgroup (unsafe.allow_missing_limits): limits.pids as
// RLIMIT_NPROC, which the kernel counts per user namespace and uid (Linux 5.14 and later),
// so per jail; the jail's own user namespace is what makes that count its own. Nothing for
// a jail without a user namespace (the count would be the host uid's).
void AddPidsRlimitFallback(const JailSpec& spec, jail::JailPlan* plan);

// CLONE_NEW* for the spec's namespaces (mount always; never CLONE_NEWCGROUP, which the
// child unshares after joining its cgroup).
unsigned NamespaceFlags(const NamespaceSpec& ns);

// The environment a command starts with: a small fixed default (PATH, HOME, USER, LOGNAME,
// SHELL, LANG, and TERM if the caller has one), overridden/extended by spec.env.
std::vector<std::pair<std::string, std::string>> CommandEnvironment(const JailSpec& spec);

}  // namespace corral::runtime
