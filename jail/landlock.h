// Landlock: a second filesystem (and TCP port) fence, independent of the mount namespace.
//
// The mount table decides what exists in the jail and which mounts are read-only; Landlock
// decides, per process, which of those paths may be read, written or executed, and which
// TCP ports may be bound or connected to. A mistake in one fence is caught by the other.
//
// Parent half (ProbeLandlockAbi, access sets): used by the planner (runtime/run/
// landlock_plan.h), which derives a LandlockPlan from the jail's mount list. Child half
// (ApplyLandlock): syscalls only, no allocation; runs after the root is built and before
// seccomp, in the command (fresh jail, prepared jail, exec into a sandbox) and in the init.
//
// The access bits are the kernel's (include/uapi/linux/landlock.h), spelled out here because
// the build host's headers may predate the running kernel's ABI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace corral::jail {

namespace landlock {
// Filesystem rights (ABI 1 unless noted).
inline constexpr uint64_t kExecute = 1ULL << 0;
inline constexpr uint64_t kWriteFile = 1ULL << 1;
inline constexpr uint64_t kReadFile = 1ULL << 2;
inline constexpr uint64_t kReadDir = 1ULL << 3;
inline constexpr uint64_t kRemoveDir = 1ULL << 4;
inline constexpr uint64_t kRemoveFile = 1ULL << 5;
inline constexpr uint64_t kMakeChar = 1ULL << 6;
inline constexpr uint64_t kMakeDir = 1ULL << 7;
inline constexpr uint64_t kMakeReg = 1ULL << 8;
inline constexpr uint64_t kMakeSock = 1ULL << 9;
inline constexpr uint64_t kMakeFifo = 1ULL << 10;
inline constexpr uint64_t kMakeBlock = 1ULL << 11;
inline constexpr uint64_t kMakeSym = 1ULL << 12;
inline constexpr uint64_t kRefer = 1ULL << 13;     // ABI 2: rename/link across directories
inline constexpr uint64_t kTruncate = 1ULL << 14;  // ABI 3
inline constexpr uint64_t kIoctlDev = 1ULL << 15;  // ABI 5: ioctl on device files
// TCP rights (ABI 4).
inline constexpr uint64_t kBindTcp = 1ULL << 0;
inline constexpr uint64_t kConnectTcp = 1ULL << 1;

// Rights that may be granted on a file (not a directory) rule; the rest need a directory.
inline constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
// Composite sets the planner grants.
inline constexpr uint64_t kRead = kReadFile | kReadDir;
inline constexpr uint64_t kWrite = kWriteFile | kRemoveDir | kRemoveFile | kMakeDir | kMakeReg |
                                   kMakeSock | kMakeFifo | kMakeSym | kRefer | kTruncate;
inline constexpr uint64_t kDevice = kReadFile | kWriteFile | kTruncate | kIoctlDev;

// Every filesystem / TCP right the given ABI knows (0 for ABI 0). A ruleset handles all
// of them, so that whatever is not granted is denied.
uint64_t FsRightsOf(int abi);
uint64_t NetRightsOf(int abi);

// The oldest ABI corral enforces: ABI 1 cannot grant renames across directories at all
// (LANDLOCK_ACCESS_FS_REFER arrived in 2), which breaks `mv` inside a writable mount.
inline constexpr int kMinimumAbi = 2;
}  // namespace landlock

// One path rule: `path` (in the jail, after pivot_root) and every file beneath it get
// `access`. A path that is not a directory gets only the kFileRights part of it.
struct LandlockPathRule {
  std::string path;
  uint64_t access = 0;

  bool operator==(const LandlockPathRule&) const = default;
};

struct LandlockPlan {
  bool enforce = false;  // false: ApplyLandlock does nothing
  int abi = 0;           // the running kernel's
  uint64_t handled_fs = 0;
  uint64_t handled_net = 0;  // 0: TCP is not fenced
  std::vector<LandlockPathRule> rules;
  std::vector<uint16_t> connect_ports;  // TCP ports that may be connected to (when fenced)
  // For reports only (the child never reads it): why enforce is false.
  std::string reason;

  bool operator==(const LandlockPlan&) const = default;
};

// Parent: the running kernel's Landlock ABI (landlock_create_ruleset with
// LANDLOCK_CREATE_RULESET_VERSION), or 0 with *err = ENOSYS (not built),
// EOPNOTSUPP (built, disabled at boot) or another errno.
int ProbeLandlockAbi(int* err);

// Child: builds the ruleset of `plan` (opening each rule's path with O_PATH; a path that is
// gone is skipped, which only takes access away), adds `extra_exec_fd` (>= 0: a file the
// process will still execve, e.g. corral-init) as readable and executable, and restricts
// the calling process. no_new_privs must be set. Reports SetupStep::kLandlock and returns
// false on failure. Every fd it opens is closed again.
bool ApplyLandlock(const LandlockPlan& plan, int extra_exec_fd, int report_fd);

}  // namespace corral::jail
