#include "cgroups/v2_driver.h"

#include <fcntl.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>

#include "base/files.h"
#include "cgroups/internal.h"

namespace corral::cgroups::internal {

namespace {

Result<std::vector<std::string>> Controllers(const std::string& dir) {
  ASSIGN_OR_RETURN(auto text, ReadIfExists(JoinPath(dir, "cgroup.controllers")));
  if (!text) return std::vector<std::string>();
  return SplitWords(*text);
}

}  // namespace

Status V2EnableControllers(const std::string& dir, const std::vector<std::string>& wanted) {
  ASSIGN_OR_RETURN(auto offered, Controllers(dir));
  std::string path = JoinPath(dir, "cgroup.subtree_control");
  ASSIGN_OR_RETURN(auto current, ReadIfExists(path));
  std::vector<std::string> enabled = current ? SplitWords(*current) : std::vector<std::string>();
  std::string add;
  for (const auto& c : wanted) {
    // Not offered: nothing to enable; ApplyLimits reports the limits that need it.
    if (Has(offered, c) && !Has(enabled, c) && !Has(enabled, "+" + c)) {
      add += (add.empty() ? "+" : " +") + c;
    }
  }
  if (add.empty()) return Ok();
  // One write: the kernel applies all of it or none of it.
  auto written = WriteFile(path, add);
  if (!written && written.error().sys_errno() == EBUSY) {
    // The "no internal processes" rule: a non-root cgroup that distributes controllers to
    // children may not hold processes itself.
    return Error(ErrorCode::kSetupFailed,
                 "enabling " + add + " in " + path +
                     ": the cgroup holds processes, and cgroup v2 lets only an empty cgroup "
                     "hand controllers to its children; move those processes into a leaf "
                     "cgroup or choose another cgroups.parent",
                 EBUSY);
  }
  if (!written) return written.error().WithContext("enabling cgroup v2 controllers");
  return Ok();
}

// ---- V2Cgroup ----

Result<std::unique_ptr<V2Cgroup>> V2Cgroup::Open(const std::string& dir, const std::string& name,
                                                 FsHooks hooks) {
  ASSIGN_OR_RETURN(UniqueFd dir_fd, OpenPath(dir, O_RDONLY | O_DIRECTORY));
  ASSIGN_OR_RETURN(UniqueFd procs_fd, OpenPath(JoinPath(dir, "cgroup.procs"), O_WRONLY));
  return std::unique_ptr<V2Cgroup>(
      new V2Cgroup(dir, name, std::move(dir_fd), std::move(procs_fd), std::move(hooks)));
}

V2Cgroup::~V2Cgroup() {
  // Best effort: a destructor has nowhere to report to. Callers that care call Destroy().
  if (!released_) (void)Destroy();
}

Result<std::vector<std::string>> V2Cgroup::ApplyLimits(const Limits& limits, bool allow_missing) {
  RETURN_IF_ERROR(ValidateLimits(limits));
  ASSIGN_OR_RETURN(auto controllers, Controllers(dir_));
  LimitReport report(allow_missing);
  // True when the limit can be written; false when it is skipped (allow_missing).
  auto usable = [&](const std::string& limit, const std::string& controller,
                    const std::string& file) -> Result<bool> {
    std::string why;
    if (!Has(controllers, controller)) {
      why = "controller '" + controller + "' not available in cgroup v2 cgroup " + dir_;
    } else if (!PathExists(JoinPath(dir_, file))) {
      why = "file " + file + " missing in " + dir_;
    } else {
      return true;
    }
    RETURN_IF_ERROR(report.Missing(limit, why));
    return false;
  };

  if (limits.memory_bytes) {
    ASSIGN_OR_RETURN(bool ok, usable("memory limit", "memory", "memory.max"));
    if (ok) {
      RETURN_IF_ERROR(WriteLimit("memory limit", JoinPath(dir_, "memory.max"),
                                 std::to_string(*limits.memory_bytes)));
      std::string swap = JoinPath(dir_, "memory.swap.max");
      if (!PathExists(swap)) {
        if (limits.no_swap) {
          report.Warn(
              "memory.swap.max missing (kernel without swap accounting): swap use "
              "is not limited");
        }
      } else {
        RETURN_IF_ERROR(WriteLimit("memory limit", swap, limits.no_swap ? "0" : "max"));
      }
    }
  }
  if (limits.cpus) {
    ASSIGN_OR_RETURN(bool ok, usable("cpu limit", "cpu", "cpu.max"));
    if (ok) {
      RETURN_IF_ERROR(WriteLimit(
          "cpu limit", JoinPath(dir_, "cpu.max"),
          std::to_string(CpuQuotaUsec(*limits.cpus)) + " " + std::to_string(kCpuPeriodUsec)));
    }
  }
  if (limits.pids) {
    ASSIGN_OR_RETURN(bool ok, usable("pids limit", "pids", "pids.max"));
    if (ok) {
      RETURN_IF_ERROR(
          WriteLimit("pids limit", JoinPath(dir_, "pids.max"), std::to_string(*limits.pids)));
    }
  }
  return report.TakeWarnings();
}

Status V2Cgroup::AddProcess(pid_t pid) {
  return WriteFile(JoinPath(dir_, "cgroup.procs"), std::to_string(pid));
}

void V2Cgroup::KeepStatFilesOpen() {
  stat_files_.KeepOpen();
  (void)ReadStats();
}

Result<Stats> V2Cgroup::ReadStats() const {
  Stats s;
  const std::string& figures = figures_dir_.empty() ? dir_ : figures_dir_;
  ASSIGN_OR_RETURN(s.memory_current_bytes,
                   ReadIntIfExists(JoinPath(figures, "memory.current"), &stat_files_));
  ASSIGN_OR_RETURN(s.memory_peak_bytes,
                   ReadIntIfExists(JoinPath(figures, "memory.peak"), &stat_files_));
  ASSIGN_OR_RETURN(auto mem_events,
                   ReadKeyedIfExists(JoinPath(figures, "memory.events"), &stat_files_));
  if (mem_events) {
    s.oom_kills = (*mem_events)["oom_kill"] - oom_kills_base_;
    s.memory_limit_hit = (*mem_events)["max"] - memory_max_base_ > 0;
  }
  ASSIGN_OR_RETURN(auto cpu, ReadKeyedIfExists(JoinPath(dir_, "cpu.stat"), &stat_files_));
  if (cpu) {
    if (cpu->count("user_usec")) s.cpu_user_usec = (*cpu)["user_usec"];
    if (cpu->count("system_usec")) s.cpu_system_usec = (*cpu)["system_usec"];
  }
  ASSIGN_OR_RETURN(s.pids_current,
                   ReadIntIfExists(JoinPath(figures, "pids.current"), &stat_files_));
  ASSIGN_OR_RETURN(s.pids_peak, ReadIntIfExists(JoinPath(figures, "pids.peak"), &stat_files_));
  ASSIGN_OR_RETURN(auto pids_events,
                   ReadKeyedIfExists(JoinPath(figures, "pids.events"), &stat_files_));
  if (pids_events) s.pids_limit_hit = (*pids_events)["max"] - pids_max_base_ > 0;
  return s;
}

Result<bool> V2Cgroup::HoldsProcesses() const {
  ASSIGN_OR_RETURN(auto procs, ReadIfExists(JoinPath(dir_, "cgroup.procs")));
  return procs && procs->find_first_not_of(" \n") != std::string::npos;
}

Status V2Cgroup::TakeFiguresFromParent(const std::string& parent_dir) {
  figures_dir_ = parent_dir;
  ASSIGN_OR_RETURN(auto mem_events, ReadKeyedIfExists(JoinPath(parent_dir, "memory.events")));
  if (mem_events) {
    oom_kills_base_ = (*mem_events)["oom_kill"];
    memory_max_base_ = (*mem_events)["max"];
  }
  ASSIGN_OR_RETURN(auto pids_events, ReadKeyedIfExists(JoinPath(parent_dir, "pids.events")));
  if (pids_events) pids_max_base_ = (*pids_events)["max"];
  return Ok();
}

Result<std::vector<pid_t>> V2Cgroup::Processes() const {
  ASSIGN_OR_RETURN(auto pids, ReadPidsRecursive(dir_));
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

Status V2Cgroup::SignalAll(int sig) {
  ASSIGN_OR_RETURN(auto pids, Processes());
  return SignalPids(pids, sig);
}

Result<bool> V2Cgroup::Populated() const {
  if (!PathExists(dir_)) return false;
  ASSIGN_OR_RETURN(auto events, ReadKeyedIfExists(JoinPath(dir_, "cgroup.events")));
  // "populated" covers the whole subtree, and zombies no longer count.
  if (events && events->count("populated")) return (*events)["populated"] != 0;
  ASSIGN_OR_RETURN(auto pids, ReadPidsRecursive(dir_));
  return !pids.empty();
}

Status V2Cgroup::KillAll() {
  if (!PathExists(dir_)) return Ok();
  std::string kill_file = JoinPath(dir_, "cgroup.kill");
  if (!PathExists(kill_file)) return KillByFreezing();
  // cgroup.kill (5.14+) SIGKILLs the subtree inside the kernel, and a fork racing it lands
  // in the cgroup already marked dying, so there is no need to loop.
  RETURN_IF_ERROR(WriteFile(kill_file, "1"));
  ASSIGN_OR_RETURN(bool empty, WaitUntil(
                                   [this]() -> Result<bool> {
                                     ASSIGN_OR_RETURN(bool p, Populated());
                                     return !p;
                                   },
                                   kKillTimeout));
  if (!empty) {
    return Error(ErrorCode::kIo, "cgroup " + dir_ + ": still populated " +
                                     std::to_string(kKillTimeout.count()) +
                                     " ms after cgroup.kill");
  }
  return Ok();
}

// cgroup.events' "frozen" turns 1 once every task below has stopped, and 0 once they run.
Status V2Cgroup::SetFrozen(bool frozen) {
  const std::string freeze = JoinPath(dir_, "cgroup.freeze");
  if (!PathExists(freeze)) {
    return Error(ErrorCode::kUnsupported,
                 "cgroup " + dir_ + ": no cgroup.freeze (the v2 freezer needs Linux 5.2)");
  }
  return WriteFreezeAndWait(
      freeze, "1", "0", frozen,
      [this, frozen]() -> Result<bool> {
        ASSIGN_OR_RETURN(auto ev, ReadKeyedIfExists(JoinPath(dir_, "cgroup.events")));
        return ev && ((*ev)["frozen"] == 1) == frozen;
      },
      "cgroup " + dir_);
}

Result<bool> V2Cgroup::Frozen() const {
  ASSIGN_OR_RETURN(auto freeze, ReadFile(JoinPath(dir_, "cgroup.freeze")));
  return Trim(freeze) == "1";
}

// Kernels before 5.14: freeze so nothing forks while we read cgroup.procs, SIGKILL every
// pid, thaw, and repeat until empty. A v2-frozen task still dies of SIGKILL (the v2
// freezer traps tasks in signal delivery), but we thaw anyway so no survivor stays frozen.
Status V2Cgroup::KillByFreezing() {
  std::string freeze = JoinPath(dir_, "cgroup.freeze");
  bool can_freeze = PathExists(freeze);
  auto deadline = std::chrono::steady_clock::now() + kKillTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    ASSIGN_OR_RETURN(bool populated, Populated());
    if (!populated) return Ok();
    if (can_freeze) {
      RETURN_IF_ERROR(WriteFile(freeze, "1"));
      ASSIGN_OR_RETURN(bool frozen, WaitUntil(
                                        [this]() -> Result<bool> {
                                          ASSIGN_OR_RETURN(auto ev, ReadKeyedIfExists(JoinPath(
                                                                        dir_, "cgroup.events")));
                                          return !ev || (*ev)["frozen"] == 1;
                                        },
                                        std::chrono::milliseconds(500)));
      (void)frozen;  // a task stuck in the kernel may never freeze; kill it regardless
    }
    ASSIGN_OR_RETURN(auto pids, ReadPidsRecursive(dir_));
    RETURN_IF_ERROR(SignalPids(pids, SIGKILL));
    if (can_freeze) RETURN_IF_ERROR(WriteFile(freeze, "0"));
    ASSIGN_OR_RETURN(bool empty, WaitUntil(
                                     [this]() -> Result<bool> {
                                       ASSIGN_OR_RETURN(bool p, Populated());
                                       return !p;
                                     },
                                     std::chrono::milliseconds(200)));
    if (empty) return Ok();
  }
  return Error(ErrorCode::kIo, "cgroup " + dir_ + ": processes survive SIGKILL for " +
                                   std::to_string(kKillTimeout.count()) + " ms");
}

Status V2Cgroup::Destroy() {
  if (destroyed_) return Ok();
  stat_files_.Close();
  // Most cgroups are empty by now (a one-shot jail's PID namespace died with its init):
  // one rmdir, and the kill (and the wait for cgroup.procs to read empty) only if busy.
  ASSIGN_OR_RETURN(bool removed, RemoveIfEmpty(dir_, hooks_));
  if (!removed) RETURN_IF_ERROR(KillAll());
  procs_fd_.Reset();
  dir_fd_.Reset();
  if (!removed) RETURN_IF_ERROR(RemoveTree(dir_, hooks_));
  destroyed_ = true;
  return Ok();
}

Result<std::unique_ptr<Cgroup>> V2Cgroup::CreateChild(const std::string& name) {
  RETURN_IF_ERROR(ValidateName(name, "cgroup name"));
  // A cgroup that holds processes (a persistent sandbox's init lives in the sandbox's own
  // cgroup, so that an idle sandbox is one memory cgroup) cannot hand controllers down
  // (cgroup v2's "no internal processes" rule): its child is made without them. It still
  // kills, freezes and lists its tree (cgroup.kill, cgroup.freeze, cgroup.procs are in
  // every cgroup), its processes are charged to and limited by this cgroup, and it is no
  // memory cgroup of its own: nothing the kernel keeps per memory cgroup, no per-exec
  // memory cgroup to make and remove. Its figures are this cgroup's (ReadStats).
  ASSIGN_OR_RETURN(const bool plain, HoldsProcesses());
  if (!plain) RETURN_IF_ERROR(V2EnableControllers(dir_, kV2Controllers));
  std::string dir = JoinPath(dir_, name);
  RETURN_IF_ERROR(MakeDir(dir, hooks_));
  auto child = Open(dir, name, hooks_);
  Status figures = child && plain ? (*child)->TakeFiguresFromParent(dir_) : Status(Ok());
  if (!child || !figures) {
    (void)RemoveTree(dir, hooks_);
    return child ? figures.error() : child.error();
  }
  return std::unique_ptr<Cgroup>(std::move(*child));
}

// ---- V2Manager ----

Result<std::unique_ptr<CgroupManager>> V2Manager::Create(const HierarchyInfo& info,
                                                         const std::vector<std::string>& parent,
                                                         ManagerOptions options) {
  // Every level from the root down must pass the controllers on; levels that already do
  // are left untouched, so a delegated subtree needs no write access above itself.
  std::string dir = info.v2_mount;
  for (const auto& component : parent) {
    RETURN_IF_ERROR(V2EnableControllers(dir, kV2Controllers));
    dir = JoinPath(dir, component);
    RETURN_IF_ERROR(EnsureDir(dir, HooksFrom(options)));
  }
  RETURN_IF_ERROR(V2EnableControllers(dir, kV2Controllers));
  return std::unique_ptr<CgroupManager>(new V2Manager(std::move(options), dir));
}

Result<std::unique_ptr<Cgroup>> V2Manager::CreateCgroup(const std::string& name) {
  RETURN_IF_ERROR(ValidateName(name, "cgroup name"));
  std::string dir = JoinPath(parent_dir_, name);
  auto made = MakeDir(dir, HooksFrom(options_));
  if (!made && made.error().sys_errno() == EEXIST) {
    return Error(ErrorCode::kAlreadyExists, "cgroup '" + name + "' already exists: " + dir);
  }
  RETURN_IF_ERROR(made);
  auto cg = V2Cgroup::Open(dir, name, HooksFrom(options_));
  if (!cg) {
    (void)RemoveTree(dir, HooksFrom(options_));
    return cg.error();
  }
  return std::unique_ptr<Cgroup>(std::move(*cg));
}

Result<std::unique_ptr<Cgroup>> V2Manager::OpenCgroup(const std::string& name) {
  RETURN_IF_ERROR(ValidateName(name, "cgroup name"));
  std::string dir = JoinPath(parent_dir_, name);
  if (!PathExists(dir)) {
    return Error(ErrorCode::kNotFound, "cgroup '" + name + "' not found: " + dir, ENOENT);
  }
  ASSIGN_OR_RETURN(auto cg, V2Cgroup::Open(dir, name, HooksFrom(options_)));
  return std::unique_ptr<Cgroup>(std::move(cg));
}

Result<std::vector<std::string>> V2Manager::ListCgroups() { return ListSubdirs(parent_dir_); }

Result<std::unique_ptr<Cgroup>> V2Manager::OpenForCleanup(const std::string& name) {
  return OpenCgroup(name);
}

}  // namespace corral::cgroups::internal
