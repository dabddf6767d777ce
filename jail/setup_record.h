// SetupRecord: the fixed-size report a jail child sends to its parent when a setup step
// fails. The child writes it to a SOCK_SEQPACKET|SOCK_CLOEXEC socket; a successful
// execve closes the socket, so the parent reads either one record (failure) or EOF
// (the command is running).
//
// Child half (ReportSetupFailure, ChildMessage): async-signal-safe, no allocation.
// Parent half (StepName, ReadSetupResult): ordinary C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"

namespace corral::jail {

// Exit status of a jail child whose setup failed; the parent reads the record, not this.
inline constexpr int kSetupFailedExit = 125;

enum class SetupStep : uint32_t {
  kLifeline = 1,     // parent death signal / parent already gone
  kStdio,            // dup2 of stdin/stdout/stderr
  kCgroupAttach,     // writing "0" into cgroup.procs
  kCgroupNamespace,  // unshare(CLONE_NEWCGROUP)
  kMount,            // building the root: tmpfs, binds, /proc, /dev, files
  kPivotRoot,        // pivot_root and detaching the old root
  kHostname,
  kNetwork,  // bringing lo up
  kFork,     // init forking the command
  kIds,      // setgroups / setresgid / setresuid
  kCapabilities,
  kRlimits,
  kNoNewPrivs,
  kCloseFds,
  kChdir,
  kSeccomp,
  kExecve,
  kInit,           // the init's own hardening
  kLandlock,       // building or applying the Landlock ruleset
  kUserNamespace,  // waiting for the parent to write the id maps
  kEnter,          // joining a running sandbox: setns, the clone into it, the pidfd handoff
};

// Lowercase name as shown to users: "mount", "pivot_root", "execve", ...
const char* StepName(SetupStep step);

struct SetupRecord {
  uint32_t step;
  int32_t err;  // errno value
  char message[480];
};

// Child side: sends {step, err, "<what>"} on `fd`. Never fails visibly.
void ReportSetupFailure(int fd, SetupStep step, int err, const char* what);

// A failure as the parent sees it.
struct SetupFailure {
  SetupStep step;
  int err;
  std::string message;  // e.g. "bind-mount /srv/skills -> /mnt/skills"

  // "setup failed at <message>: <strerror>"
  std::string ToString() const;
};

// Parent side: reads one record or EOF from `fd`, waiting at most `timeout_ms`
// (-1 = forever). nullopt = EOF (the command is running). A timeout or a malformed record
// is an Error.
Result<std::optional<SetupFailure>> ReadSetupResult(int fd, int timeout_ms);

// errno value -> "ENOENT" (for the JSON outcome).
const char* ErrnoName(int err);

}  // namespace corral::jail
