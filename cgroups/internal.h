// Helpers shared by the cgroups drivers (parent process only). Not part of the public
// interface; unit tests include it to test the pure parts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "cgroups/cgroup.h"
#include "cgroups/stat_files.h"

namespace corral::cgroups::internal {

// ---- names (names.cc) ----

// [A-Za-z0-9_.-]{1,128}, and not "." or "..".
bool IsValidName(const std::string& name);
// kInvalidArgument "<what> 'name': must match [A-Za-z0-9_.-]{1,128}" unless valid.
Status ValidateName(const std::string& name, const std::string& what);
// Splits ManagerOptions::parent into validated components ("a/b" or "/a/b").
Result<std::vector<std::string>> ParentComponents(const std::string& parent);
// Parses "run-<pid>-<n>"; nullopt for any other name.
std::optional<pid_t> ParseOneShotName(const std::string& name);
// Names among `names` that ReapOrphans should remove: run-<pid>-<n> with !is_live(pid).
std::vector<std::string> SelectOrphans(const std::vector<std::string>& names,
                                       const std::function<bool(pid_t)>& is_live);
// The default ManagerOptions::is_live_corral.
bool IsLiveCorral(pid_t pid);

// ---- mount table and kernel (detect.cc) ----

struct MountEntry {
  std::string mount_point;    // octal escapes decoded
  std::string fstype;         // "cgroup", "cgroup2", ...
  std::string super_options;  // "rw,cpu,cpuacct"
};
// Parses /proc/<pid>/mountinfo text. Malformed lines are an error naming the line number.
Result<std::vector<MountEntry>> ParseMountinfo(const std::string& text);
// Controllers named in v1 super options: "rw,cpu,cpuacct" -> {cpu, cpuacct}; mount
// options and "name=" are dropped.
std::vector<std::string> V1Controllers(const std::string& super_options);
// True if a "major.minor[.patch...]" release is >= major.minor.
bool KernelAtLeast(const std::string& release, int major, int minor);

// ---- cgroupfs access (fs_util.cc) ----

std::string JoinPath(const std::string& a, const std::string& b);
// Whether `v` holds `x`.
bool Has(const std::vector<std::string>& v, const std::string& x);
// Writes `value` to the limit file `path`; an error names `limit`.
Status WriteLimit(const std::string& limit, const std::string& path, const std::string& value);
bool PathExists(const std::string& path);
// Whitespace-separated tokens.
std::vector<std::string> SplitWords(const std::string& s);
// "key value" lines (memory.events, cpu.stat, pids.events, oom_control, cpuacct.stat).
// Lines whose value is not an integer are skipped.
std::map<std::string, int64_t> ParseKeyed(const std::string& text);
// Whole file, or nullopt when it does not exist (the kernel or controller lacks it).
// Through `files` (kept open there, if it says so) when given.
Result<std::optional<std::string>> ReadIfExists(const std::string& path,
                                                StatFiles* files = nullptr);
// One integer, or nullopt when the file does not exist.
Result<std::optional<int64_t>> ReadIntIfExists(const std::string& path, StatFiles* files = nullptr);
// Parsed "key value" file, or nullopt when it does not exist.
Result<std::optional<std::map<std::string, int64_t>>> ReadKeyedIfExists(const std::string& path,
                                                                        StatFiles* files = nullptr);
// Pids listed in a cgroup.procs file (missing file: none).
Result<std::vector<pid_t>> ReadPids(const std::string& procs_path);
// Pids in `dir` and every cgroup below it.
Result<std::vector<pid_t>> ReadPidsRecursive(const std::string& dir);
// Names of the subdirectories of `dir` (missing dir: none).
Result<std::vector<std::string>> ListSubdirs(const std::string& dir);
// The test seams of ManagerOptions (mkdir_hook, rmdir_hook), carried by every handle.
struct FsHooks {
  std::function<Status(const std::string&)> after_mkdir;
  std::function<Status(const std::string&)> rmdir;
};
inline FsHooks HooksFrom(const ManagerOptions& o) { return {o.mkdir_hook, o.rmdir_hook}; }
// mkdir; kAlreadyExists if it exists. Runs hooks.after_mkdir (if any) on success.
Status MakeDir(const std::string& path, const FsHooks& hooks);
// mkdir unless it exists (for the parent chain).
Status EnsureDir(const std::string& path, const FsHooks& hooks);
// rmdir of `dir` and every cgroup below it, children first; a missing dir is fine.
// Retries EBUSY for a short while (a cgroup can read empty just before rmdir accepts it).
Status RemoveTree(const std::string& dir, const FsHooks& hooks);
// One rmdir of `dir`: true if it is gone (or was), false if busy (tasks or child cgroups
// in it), an error otherwise.
Result<bool> RemoveIfEmpty(const std::string& dir, const FsHooks& hooks);
Result<UniqueFd> OpenPath(const std::string& path, int flags);
// Polls `done` (with growing sleeps) until true, it fails, or `timeout` passes.
// Returns whether it became true.
Result<bool> WaitUntil(const std::function<Result<bool>()>& done,
                       std::chrono::milliseconds timeout);
// SetFrozen of both drivers: writes `frozen ? on : off` into `file`, waits (at most
// kFreezeTimeout) until `reached` says the kernel is done, and undoes a freeze that did
// not complete. `what` names the cgroup in the error.
Status WriteFreezeAndWait(const std::string& file, const char* on, const char* off, bool frozen,
                          const std::function<Result<bool>()>& reached, const std::string& what);
// kill() each pid; ESRCH is fine (it already exited).
Status SignalPids(const std::vector<pid_t>& pids, int sig);

// ---- limits (fs_util.cc) ----

// kInvalidArgument naming the limit for non-positive or non-finite values.
Status ValidateLimits(const Limits& limits);
// cpus -> cfs quota per kCpuPeriodUsec, at least the kernel minimum of 1 ms.
int64_t CpuQuotaUsec(double cpus);

// Collects the outcome of ApplyLimits: a limit the host cannot enforce is an error, or a
// warning when allow_missing is set.
class LimitReport {
 public:
  explicit LimitReport(bool allow_missing) : allow_missing_(allow_missing) {}
  // kUnsupported "<limit>: <why>", or Ok after recording "<limit>: <why> (skipped)".
  Status Missing(const std::string& limit, const std::string& why);
  void Warn(std::string warning) { warnings_.push_back(std::move(warning)); }
  std::vector<std::string> TakeWarnings() { return std::move(warnings_); }

 private:
  bool allow_missing_;
  std::vector<std::string> warnings_;
};

// How long KillAll waits for a cgroup to empty before it gives up.
inline constexpr std::chrono::milliseconds kKillTimeout{5000};
// How long SetFrozen waits for a freeze (or thaw) to complete before it undoes it.
inline constexpr std::chrono::milliseconds kFreezeTimeout{2000};
inline constexpr int64_t kCpuPeriodUsec = 100000;

}  // namespace corral::cgroups::internal
