// cgroups: one small interface over the two kernel APIs, cgroup v2 (preferred) and v1
// (hybrid hosts). Runs in the parent (supervisor) process only.
//
// Lifecycle of one jail's cgroup:
//   auto mgr = CgroupManager::Create(options);          // detect, once per process
//   mgr->ReapOrphans();                                  // leftovers of crashed corrals
//   auto cg = mgr->CreateCgroup(CgroupManager::OneShotName());
//   cg->ApplyLimits(limits);                             // refuses what it cannot enforce
//   spawn the child with cg->clone_into_fd() (v2, clone3 CLONE_INTO_CGROUP) or have the
//     child write "0" into each fd of cg->attach_fds() as its first step (v1)
//   ... cg->ReadStats() ...
//   cg->KillAll(); cg->Destroy();                        // also done by ~Cgroup
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"

namespace corral::cgroups {

enum class Driver { kV1, kV2 };
const char* DriverName(Driver d);  // "v1" / "v2"

struct Limits {
  std::optional<int64_t> memory_bytes;  // memory.max / memory.limit_in_bytes
  bool no_swap = true;                  // memory.swap.max=0 / memsw = memory
  std::optional<double> cpus;           // cpu.max / cfs_quota_us over cfs_period_us
  std::optional<int64_t> pids;          // pids.max
};

// What was observed. Absent fields: the driver or kernel cannot tell.
struct Stats {
  std::optional<int64_t> memory_current_bytes;
  std::optional<int64_t> memory_peak_bytes;  // v2 memory.peak, v1 max_usage_in_bytes
  std::optional<int64_t> cpu_user_usec;
  std::optional<int64_t> cpu_system_usec;
  std::optional<int64_t> pids_current;
  std::optional<int64_t> pids_peak;  // v2 pids.peak where the kernel has it
  // This cgroup and every cgroup below it: v2 memory.events oom_kill (hierarchical, and
  // it keeps the kills of removed children); v1 oom_control oom_kill summed over the
  // subtree that still exists (v1 counts only in the victim's cgroup, so a removed
  // child's kills are lost with it: callers that remove children keep their own count).
  int64_t oom_kills = 0;
  bool memory_limit_hit = false;  // v2 memory.events max>0; v1 failcnt>0
  bool pids_limit_hit = false;    // pids.events max>0
};

// One live cgroup (on v1: one directory per controller hierarchy, acting as one).
// Owning handle: the destructor kills every process inside and removes the directories.
class Cgroup {
 public:
  virtual ~Cgroup() = default;

  // Name (last path component), e.g. "run-1234-1".
  virtual const std::string& name() const = 0;
  // Directory per hierarchy, for logs and tests.
  virtual std::vector<std::string> paths() const = 0;

  // Writes the limits. A limit whose controller or file is missing is an error of kind
  // kUnsupported naming the limit, unless allow_missing is set (then it is skipped and
  // reported in the returned warnings).
  virtual Result<std::vector<std::string>> ApplyLimits(const Limits& limits,
                                                       bool allow_missing) = 0;

  // v2: an O_DIRECTORY|O_CLOEXEC fd of the cgroup, for clone3(CLONE_INTO_CGROUP).
  // v1: -1.
  virtual int clone_into_fd() const = 0;
  // O_WRONLY|O_CLOEXEC fds of each hierarchy's cgroup.procs; a child that writes "0"
  // into each moves itself in. Used on v1, and on v2 when clone3 is unavailable.
  virtual std::vector<int> attach_fds() const = 0;
  // Moves an existing process in (parent side).
  virtual Status AddProcess(pid_t pid) = 0;

  virtual Result<Stats> ReadStats() const = 0;
  // From now on ReadStats() keeps the files it reads open and re-reads them: for a cgroup
  // made ahead of its run (a pooled jail's), whose figures are read on the way to the
  // answer. Reads them once now. Destroy() closes them.
  virtual void KeepStatFilesOpen() = 0;
  // Pids of every process inside (all hierarchies, deduplicated).
  virtual Result<std::vector<pid_t>> Processes() const = 0;

  // Sends `sig` to every process inside (for the SIGTERM of a graceful stop).
  virtual Status SignalAll(int sig) = 0;
  // SIGKILLs every process inside, forks racing the kill included (v2 cgroup.kill;
  // v1 freeze, kill, thaw, repeat until empty), and waits until the cgroup is empty.
  virtual Status KillAll() = 0;
  // Kills what is left and removes the directories. Idempotent.
  virtual Status Destroy() = 0;

  // Pause and resume: freezes every process inside, child cgroups included (v2
  // cgroup.freeze, v1 freezer.state), or thaws them, and waits until the kernel says it is
  // done. A freeze that does not complete within kFreezeTimeout (a task in uninterruptible
  // sleep, e.g. on a hung NFS mount) is undone and reported as an error. kUnsupported
  // where the freezer is missing (v1 without the freezer hierarchy, v2 before 5.2).
  virtual Status SetFrozen(bool frozen) = 0;
  // Whether the cgroup is frozen (also: being frozen) right now.
  virtual Result<bool> Frozen() const = 0;

  // A child cgroup (same driver, same hierarchies), e.g. one per exec into a persistent
  // sandbox. `name` must match [A-Za-z0-9_.-]{1,128}.
  //
  // cgroup v2 "no internal processes" rule: a cgroup that hands controllers to a child
  // (memory/cpu/pids in its cgroup.subtree_control) may hold no processes itself. So on
  // v2, a cgroup that holds processes (a persistent sandbox's, with its init) gets a child
  // WITHOUT controllers: it kills, freezes and lists its tree; its processes are charged
  // to and limited by this cgroup; its ReadStats() gives this cgroup's memory and pids
  // figures (OOM kills and limit hits counted from the child's creation) and its own CPU
  // time. An empty cgroup enables the controllers and gets a full child, as on v1.
  virtual Result<std::unique_ptr<Cgroup>> CreateChild(const std::string& name) = 0;

  // Gives up ownership: the destructor then leaves processes and directories alone (a
  // persistent sandbox's cgroup outlives the handle that created or opened it).
  virtual void Release() = 0;
};

struct ManagerOptions {
  std::string driver = "auto";    // auto | v1 | v2
  std::string parent = "corral";  // relative to each hierarchy's root, or absolute
  // Where cgroup filesystems are looked for; tests point this at a fake tree.
  std::string mountinfo_path = "/proc/self/mountinfo";
  std::string fs_root_override;  // if set, prepended to every mount point (fake cgroupfs)

  // Additions (tests and special hosts). Empty/unset means the real thing.
  std::string kernel_release;  // instead of uname -r, e.g. "5.4.0"
  // Whether `pid` is a live corral process, for ReapOrphans. Default: the pid exists, is
  // not a zombie, and its /proc/<pid>/comm starts with "corral" or equals our own comm.
  std::function<bool(pid_t)> is_live_corral;
  // Called after every mkdir of a cgroup directory, so a fake cgroupfs can create the
  // interface files the kernel would.
  std::function<Status(const std::string& dir)> mkdir_hook;
  // Replaces rmdir(2) of a cgroup directory (a fake cgroupfs must delete its interface
  // files first; the kernel does that itself). Must fail like rmdir (errno in the Error).
  std::function<Status(const std::string& dir)> rmdir_hook;
};

// What the host offers; also used by `corral check`.
struct HierarchyInfo {
  bool v2_mounted = false;
  std::string v2_mount;                     // e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified
  std::vector<std::string> v2_controllers;  // from cgroup.controllers of the v2 root
  std::vector<std::pair<std::string, std::string>> v1_mounts;  // controller -> mount point
  bool clone_into_cgroup = false;                              // kernel >= 5.7 and v2 in use
  // Paths above include ManagerOptions::fs_root_override.
  // Added: the driver `options.driver` resolves to here, or why none works (for
  // `corral check`). Exactly one of the two is set.
  std::optional<Driver> driver;
  std::string unusable_reason;
};
// Fails if the mount table cannot be read or options.driver is not a driver name; an
// unusable host is described in the result (driver unset, unusable_reason).
Result<HierarchyInfo> Detect(const ManagerOptions& options);

// Picks the driver for `requested` ("auto" | "v1" | "v2") on a detected host; kUnsupported
// with what is missing when none fits, kInvalidArgument for an unknown name.
Result<Driver> SelectDriver(const HierarchyInfo& info, const std::string& requested);

// Limits without root (cgroups/delegation.cc): the cgroup v2 directory this process runs
// in, if it is delegated to `uid` (it and its cgroup.procs and cgroup.subtree_control
// owned and writable by uid, with memory, cpu and pids given to it by its parent), or why
// not. `self_cgroup` is the text of /proc/self/cgroup.
struct DelegatedCgroup {
  std::optional<std::string> dir;  // a filesystem path under info.v2_mount
  std::string why_not;             // set when dir is not
};
DelegatedCgroup FindDelegatedCgroup(const HierarchyInfo& info, const std::string& self_cgroup,
                                    uid_t uid);

class CgroupManager {
 public:
  virtual ~CgroupManager() = default;

  // Detects the hierarchies and picks the driver: v2 when its root has memory, cpu and
  // pids, else v1 when those are mounted as v1, else an error (kUnsupported) explaining
  // what is missing. An explicit driver that does not work here is an error too.
  static Result<std::unique_ptr<CgroupManager>> Create(const ManagerOptions& options);

  // cgroup v1: the first write to any cgroup.procs after a quiet spell waits for an RCU
  // grace period (5-20 ms measured here; the global cgroup_threadgroup_rwsem's writer must
  // first push every reader onto the slow path), and writes within a grace period of
  // the last one are fast. This starts that wait now, on a thread that migrates this
  // process into the cgroup it is already in (a no-op), so that it elapses while the
  // caller plans and clones the jail; the child's own attach then waits only for what is
  // left. Call it after the cgroup's directories are made and its limits written: the
  // writer holds cgroup_mutex while it waits, so a mkdir or rmdir of any cgroup waits
  // with it. The thread is joined when the handle is destroyed. v2 and fake cgroupfs
  // trees: an empty handle (clone3 CLONE_INTO_CGROUP needs no migration).
  virtual std::jthread WarmUpAttach() { return {}; }
  virtual Driver driver() const = 0;
  // Creates `<parent>/<name>` in every hierarchy the driver uses. `name` must match
  // [A-Za-z0-9_.-]{1,128}.
  virtual Result<std::unique_ptr<Cgroup>> CreateCgroup(const std::string& name) = 0;
  // Opens an existing cgroup under the parent (persistent sandboxes, found again later).
  virtual Result<std::unique_ptr<Cgroup>> OpenCgroup(const std::string& name) = 0;

  // Kills and removes cgroups left under the parent by corral processes that died:
  // names of the form "run-<pid>-<n>" whose <pid> is no longer a live corral. Other
  // names (persistent sandboxes use "sbx-<id>") are left alone. Returns the names removed.
  virtual Result<std::vector<std::string>> ReapOrphans() = 0;
  // Kills and removes whatever exists of `<parent>/<name>`, in any hierarchy: what a
  // create that died half-way left (on v1, perhaps only some controllers' directories,
  // which OpenCgroup would not open). Ok if nothing exists.
  virtual Status RemoveLeftover(const std::string& name) = 0;

  // "run-<getpid()>-<counter>", unique within this process.
  static std::string OneShotName();
};

}  // namespace corral::cgroups
