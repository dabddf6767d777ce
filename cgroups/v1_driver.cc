#include "cgroups/v1_driver.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "base/files.h"
#include "cgroups/internal.h"

namespace corral::cgroups::internal {

namespace {

// Before 5.11 a v1 memory cgroup defaulted to use_hierarchy=0, which can only be changed
// while it has no children; without it, a nested per-exec cgroup is not charged to the
// sandbox cgroup above it. So it is set right after mkdir. Newer kernels always read 1.
Status EnsureMemoryHierarchy(const std::string& dir) {
  std::string path = JoinPath(dir, "memory.use_hierarchy");
  ASSIGN_OR_RETURN(auto value, ReadIntIfExists(path));
  if (!value || *value == 1) return Ok();
  return WriteFile(path, "1");
}

// oom_kill in memory.oom_control of the cgroups below `dir` (not `dir` itself). On v1 the
// kernel counts an OOM kill only in the victim's own cgroup and does not carry it up (v2's
// memory.events does), so a persistent sandbox whose exec was killed in its own leaf
// would read 0 at the sandbox cgroup; summing the subtree reports it the way v2 does.
// Best effort: a subtree that cannot be listed adds nothing rather than failing the read.
int64_t OomKillsBelow(const std::string& dir) {
  int64_t total = 0;
  auto children = ListSubdirs(dir);
  if (!children) return 0;
  for (const std::string& child : *children) {
    std::string sub = JoinPath(dir, child);
    auto oom = ReadKeyedIfExists(JoinPath(sub, "memory.oom_control"));
    // A child removed while we read (an exec's leaf, at its end) has nothing left to count.
    if (oom && *oom) total += (**oom)["oom_kill"];
    total += OomKillsBelow(sub);
  }
  return total;
}

void RemoveAll(const std::vector<V1Dir>& dirs, const FsHooks& hooks) {
  for (const auto& d : dirs) (void)RemoveTree(d.dir, hooks);
}

}  // namespace

std::vector<V1Dir> V1Hierarchies(const HierarchyInfo& info) {
  std::vector<V1Dir> out;
  for (const auto& controller : kV1Controllers) {
    for (const auto& entry : info.v1_mounts) {
      // Named references, not a structured binding: clang 14 cannot capture those.
      const auto& c = entry.first;
      const auto& mount = entry.second;
      if (c != controller) continue;
      auto same =
          std::find_if(out.begin(), out.end(), [&](const V1Dir& d) { return d.dir == mount; });
      if (same != out.end()) {
        same->controllers.push_back(c);
      } else {
        out.push_back({mount, {c}});
      }
    }
  }
  return out;
}

bool V1MemswFirst(int64_t current_memory_limit, int64_t new_limit) {
  return new_limit > current_memory_limit;
}

// ---- V1Cgroup ----

Result<std::unique_ptr<V1Cgroup>> V1Cgroup::Open(std::vector<V1Dir> dirs, const std::string& name,
                                                 FsHooks hooks) {
  std::vector<UniqueFd> fds;
  for (const auto& d : dirs) {
    ASSIGN_OR_RETURN(UniqueFd fd, OpenPath(JoinPath(d.dir, "cgroup.procs"), O_WRONLY));
    fds.push_back(std::move(fd));
  }
  return std::unique_ptr<V1Cgroup>(
      new V1Cgroup(std::move(dirs), name, std::move(fds), std::move(hooks)));
}

Result<std::unique_ptr<V1Cgroup>> V1Cgroup::Make(const std::vector<V1Dir>& parents,
                                                 const std::string& name, FsHooks hooks) {
  RETURN_IF_ERROR(ValidateName(name, "cgroup name"));
  std::vector<V1Dir> made;
  for (const auto& p : parents) {
    std::string dir = JoinPath(p.dir, name);
    auto mk = MakeDir(dir, hooks);
    if (!mk) {
      RemoveAll(made, hooks);
      if (mk.error().sys_errno() == EEXIST) {
        return Error(ErrorCode::kAlreadyExists, "cgroup '" + name + "' already exists: " + dir);
      }
      return mk.error();
    }
    made.push_back({dir, p.controllers});
    if (Has(p.controllers, "memory")) {
      auto hier = EnsureMemoryHierarchy(dir);
      if (!hier) {
        RemoveAll(made, hooks);
        return hier.error();
      }
    }
  }
  auto cg = Open(made, name, std::move(hooks));
  if (!cg) RemoveAll(made, hooks);
  return cg;
}

V1Cgroup::~V1Cgroup() {
  // Best effort: a destructor has nowhere to report to. Callers that care call Destroy().
  if (!released_) (void)Destroy();
}

std::vector<std::string> V1Cgroup::paths() const {
  std::vector<std::string> out;
  for (const auto& d : dirs_) out.push_back(d.dir);
  return out;
}

std::vector<int> V1Cgroup::attach_fds() const {
  std::vector<int> out;
  for (const auto& fd : procs_fds_) out.push_back(fd.get());
  return out;
}

const std::string* V1Cgroup::DirOf(const std::string& controller) const {
  for (const auto& d : dirs_) {
    if (Has(d.controllers, controller)) return &d.dir;
  }
  return nullptr;
}

Result<std::vector<std::string>> V1Cgroup::ApplyLimits(const Limits& limits, bool allow_missing) {
  RETURN_IF_ERROR(ValidateLimits(limits));
  LimitReport report(allow_missing);
  if (limits.memory_bytes) RETURN_IF_ERROR(ApplyMemory(limits, report));
  if (limits.cpus) RETURN_IF_ERROR(ApplyCpu(*limits.cpus, report));
  if (limits.pids) {
    const std::string* dir = DirOf("pids");
    if (dir == nullptr) {
      RETURN_IF_ERROR(
          report.Missing("pids limit", "controller 'pids' not available in cgroup v1 hierarchy"));
    } else if (!PathExists(JoinPath(*dir, "pids.max"))) {
      RETURN_IF_ERROR(report.Missing("pids limit", "file pids.max missing in " + *dir));
    } else {
      RETURN_IF_ERROR(
          WriteLimit("pids limit", JoinPath(*dir, "pids.max"), std::to_string(*limits.pids)));
    }
  }
  return report.TakeWarnings();
}

Status V1Cgroup::ApplyMemory(const Limits& limits, LimitReport& report) {
  const std::string* dir = DirOf("memory");
  if (dir == nullptr) {
    return report.Missing("memory limit",
                          "controller 'memory' not available in cgroup v1 hierarchy");
  }
  std::string mem = JoinPath(*dir, "memory.limit_in_bytes");
  if (!PathExists(mem)) {
    return report.Missing("memory limit", "file memory.limit_in_bytes missing in " + *dir);
  }
  std::string value = std::to_string(*limits.memory_bytes);
  std::string memsw = JoinPath(*dir, "memory.memsw.limit_in_bytes");
  if (!PathExists(memsw)) {
    if (limits.no_swap) {
      report.Warn(
          "memory.memsw.limit_in_bytes missing (swap accounting off, e.g. "
          "swapaccount=0): swap use is not limited");
    }
    return WriteLimit("memory limit", mem, value);
  }
  if (!limits.no_swap) {
    // Unlimited memsw is above any memory limit, so it can go first.
    RETURN_IF_ERROR(WriteLimit("memory limit", memsw, "-1"));
    return WriteLimit("memory limit", mem, value);
  }
  // The kernel keeps memsw.limit >= limit at every write (EINVAL otherwise): raise memsw
  // before memory, lower memory before memsw.
  ASSIGN_OR_RETURN(auto current, ReadIntIfExists(mem));
  if (V1MemswFirst(current.value_or(std::numeric_limits<int64_t>::max()), *limits.memory_bytes)) {
    RETURN_IF_ERROR(WriteLimit("memory limit", memsw, value));
    return WriteLimit("memory limit", mem, value);
  }
  RETURN_IF_ERROR(WriteLimit("memory limit", mem, value));
  return WriteLimit("memory limit", memsw, value);
}

Status V1Cgroup::ApplyCpu(double cpus, LimitReport& report) {
  const std::string* dir = DirOf("cpu");
  if (dir == nullptr) {
    return report.Missing("cpu limit", "controller 'cpu' not available in cgroup v1 hierarchy");
  }
  std::string quota = JoinPath(*dir, "cpu.cfs_quota_us");
  if (!PathExists(quota)) {
    return report.Missing("cpu limit", "file cpu.cfs_quota_us missing in " + *dir +
                                           " (kernel without CFS bandwidth control)");
  }
  RETURN_IF_ERROR(
      WriteLimit("cpu limit", JoinPath(*dir, "cpu.cfs_period_us"), std::to_string(kCpuPeriodUsec)));
  return WriteLimit("cpu limit", quota, std::to_string(CpuQuotaUsec(cpus)));
}

Status V1Cgroup::AddProcess(pid_t pid) {
  for (const auto& d : dirs_) {
    RETURN_IF_ERROR(WriteFile(JoinPath(d.dir, "cgroup.procs"), std::to_string(pid)));
  }
  return Ok();
}

void V1Cgroup::KeepStatFilesOpen() {
  stat_files_.KeepOpen();
  (void)ReadStats();
}

Result<Stats> V1Cgroup::ReadStats() const {
  Stats s;
  if (const std::string* dir = DirOf("memory")) {
    ASSIGN_OR_RETURN(s.memory_current_bytes,
                     ReadIntIfExists(JoinPath(*dir, "memory.usage_in_bytes"), &stat_files_));
    ASSIGN_OR_RETURN(s.memory_peak_bytes,
                     ReadIntIfExists(JoinPath(*dir, "memory.max_usage_in_bytes"), &stat_files_));
    ASSIGN_OR_RETURN(auto failcnt, ReadIntIfExists(JoinPath(*dir, "memory.failcnt"), &stat_files_));
    // With memsw limited the kernel charges memsw first, and a charge that fails there
    // never reaches the memory counter: then only memsw.failcnt counts the hits.
    ASSIGN_OR_RETURN(auto memsw_failcnt,
                     ReadIntIfExists(JoinPath(*dir, "memory.memsw.failcnt"), &stat_files_));
    ASSIGN_OR_RETURN(auto oom,
                     ReadKeyedIfExists(JoinPath(*dir, "memory.oom_control"), &stat_files_));
    if (oom) s.oom_kills = (*oom)["oom_kill"];
    s.oom_kills += OomKillsBelow(*dir);
    // Some kernels (seen on 6.18) leave both failcnts at 0 even while OOM-killing at the
    // limit, so a peak at the limit or an OOM kill counts as a hit as well.
    ASSIGN_OR_RETURN(auto limit,
                     ReadIntIfExists(JoinPath(*dir, "memory.limit_in_bytes"), &stat_files_));
    bool peak_at_limit = limit && s.memory_peak_bytes && *s.memory_peak_bytes >= *limit;
    s.memory_limit_hit = failcnt.value_or(0) > 0 || memsw_failcnt.value_or(0) > 0 ||
                         peak_at_limit || s.oom_kills > 0;
  }
  if (const std::string* dir = DirOf("cpuacct")) {
    ASSIGN_OR_RETURN(auto user,
                     ReadIntIfExists(JoinPath(*dir, "cpuacct.usage_user"), &stat_files_));
    ASSIGN_OR_RETURN(auto sys, ReadIntIfExists(JoinPath(*dir, "cpuacct.usage_sys"), &stat_files_));
    if (user && sys) {
      s.cpu_user_usec = *user / 1000;  // ns
      s.cpu_system_usec = *sys / 1000;
    } else {
      // Older kernels: only cpuacct.stat, in USER_HZ ticks.
      ASSIGN_OR_RETURN(auto stat, ReadKeyedIfExists(JoinPath(*dir, "cpuacct.stat"), &stat_files_));
      long hz = ::sysconf(_SC_CLK_TCK);
      if (stat && hz > 0 && stat->count("user") && stat->count("system")) {
        s.cpu_user_usec = (*stat)["user"] * 1000000 / hz;
        s.cpu_system_usec = (*stat)["system"] * 1000000 / hz;
      }
    }
  }
  if (const std::string* dir = DirOf("pids")) {
    ASSIGN_OR_RETURN(s.pids_current, ReadIntIfExists(JoinPath(*dir, "pids.current"), &stat_files_));
    ASSIGN_OR_RETURN(s.pids_peak, ReadIntIfExists(JoinPath(*dir, "pids.peak"), &stat_files_));
    ASSIGN_OR_RETURN(auto events, ReadKeyedIfExists(JoinPath(*dir, "pids.events"), &stat_files_));
    if (events) s.pids_limit_hit = (*events)["max"] > 0;
  }
  return s;
}

Result<std::vector<pid_t>> V1Cgroup::Processes() const {
  std::vector<pid_t> out;
  for (const auto& d : dirs_) {
    ASSIGN_OR_RETURN(auto pids, ReadPidsRecursive(d.dir));
    out.insert(out.end(), pids.begin(), pids.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status V1Cgroup::SignalAll(int sig) {
  ASSIGN_OR_RETURN(auto pids, Processes());
  return SignalPids(pids, sig);
}

// freezer.state reads FREEZING until every task (and every child cgroup's) has stopped.
// The v1 freezer signals the tasks it finds when FROZEN is written; a task forked or exec'd
// in between can slip through and leave the cgroup FREEZING for good, which the freezer's
// documentation (before Linux 3.x reworded it) answered with "retry or thaw". So while it
// reads FREEZING, FROZEN is written again, and every kRethawPolls polls the cgroup is thawed
// for a moment first (what runc does too): a sandbox that forks all the time, a shell loop
// around `sleep`, then freezes within the timeout instead of failing it.
Status V1Cgroup::SetFrozen(bool frozen) {
  const std::string* freezer = DirOf("freezer");
  if (freezer == nullptr) {
    return Error(ErrorCode::kUnsupported,
                 "cgroup '" + name_ + "': the v1 freezer hierarchy is not mounted");
  }
  constexpr int kRethawPolls = 25;
  const std::string state = JoinPath(*freezer, "freezer.state");
  const char* want = frozen ? "FROZEN" : "THAWED";
  int freezing_polls = 0;
  return WriteFreezeAndWait(
      state, "FROZEN", "THAWED", frozen,
      [&]() -> Result<bool> {
        ASSIGN_OR_RETURN(auto s, ReadFile(state));
        const std::string now = Trim(s);
        if (now == want) return true;
        if (frozen && now == "FREEZING") {
          if (++freezing_polls % kRethawPolls == 0) (void)WriteFile(state, "THAWED");
          RETURN_IF_ERROR(WriteFile(state, "FROZEN"));
        }
        return false;
      },
      "cgroup '" + name_ + "'");
}

Result<bool> V1Cgroup::Frozen() const {
  const std::string* freezer = DirOf("freezer");
  if (freezer == nullptr) return false;
  ASSIGN_OR_RETURN(auto s, ReadFile(JoinPath(*freezer, "freezer.state")));
  return Trim(s) != "THAWED";
}

// v1 has no cgroup.kill. Freezing first means no task can fork between our read of
// cgroup.procs and the kill; a v1-frozen task does not act on SIGKILL until thawed, so the
// kill lands on thaw. A task in uninterruptible sleep can keep the cgroup FREEZING
// forever, so a freeze that does not complete is not waited for beyond a second.
Status V1Cgroup::KillRound(const std::string* freezer) {
  std::string state = freezer ? JoinPath(*freezer, "freezer.state") : "";
  bool can_freeze = freezer != nullptr && PathExists(state);
  if (can_freeze) {
    RETURN_IF_ERROR(WriteFile(state, "FROZEN"));
    ASSIGN_OR_RETURN(bool frozen, WaitUntil(
                                      [&]() -> Result<bool> {
                                        ASSIGN_OR_RETURN(auto s, ReadFile(state));
                                        return Trim(s) == "FROZEN";
                                      },
                                      std::chrono::milliseconds(1000)));
    (void)frozen;
  }
  auto pids = Processes();
  Status killed = pids ? SignalPids(*pids, SIGKILL) : Status(pids.error());
  if (can_freeze) RETURN_IF_ERROR(WriteFile(state, "THAWED"));
  return killed;
}

Status V1Cgroup::KillAll() {
  const std::string* freezer = DirOf("freezer");
  auto deadline = std::chrono::steady_clock::now() + kKillTimeout;
  auto empty = [this]() -> Result<bool> {
    ASSIGN_OR_RETURN(auto pids, Processes());
    return pids.empty();
  };
  while (std::chrono::steady_clock::now() < deadline) {
    ASSIGN_OR_RETURN(bool done, empty());
    if (done) return Ok();
    RETURN_IF_ERROR(KillRound(freezer));
    ASSIGN_OR_RETURN(done, WaitUntil(empty, std::chrono::milliseconds(200)));
    if (done) return Ok();
  }
  return Error(ErrorCode::kIo, "cgroup '" + name_ + "': processes survive SIGKILL for " +
                                   std::to_string(kKillTimeout.count()) + " ms");
}

Status V1Cgroup::Destroy() {
  if (destroyed_) return Ok();
  stat_files_.Close();
  RETURN_IF_ERROR(RemoveIfEmptyFirst());
  if (destroyed_) return Ok();
  RETURN_IF_ERROR(KillAll());
  procs_fds_.clear();
  Status first;
  for (const auto& d : dirs_) {
    Status removed = RemoveTree(d.dir, hooks_);
    if (!removed && first) first = removed;
  }
  RETURN_IF_ERROR(first);
  destroyed_ = true;
  return Ok();
}

// Most cgroups are empty when destroyed (a one-shot jail's PID namespace died with its
// init): one rmdir per hierarchy then, and no reading of cgroup.procs everywhere and
// killing. The first busy directory (tasks, or child cgroups) leaves the rest, removed or
// not, to KillAll and RemoveTree, which take a directory already gone for an empty one.
Status V1Cgroup::RemoveIfEmptyFirst() {
  for (const auto& d : dirs_) {
    ASSIGN_OR_RETURN(bool removed, RemoveIfEmpty(d.dir, hooks_));
    if (!removed) return Ok();
  }
  procs_fds_.clear();
  destroyed_ = true;
  return Ok();
}

Result<std::unique_ptr<Cgroup>> V1Cgroup::CreateChild(const std::string& name) {
  ASSIGN_OR_RETURN(auto child, Make(dirs_, name, hooks_));
  return std::unique_ptr<Cgroup>(std::move(child));
}

// ---- V1Manager ----

namespace {

// cgroup.procs of the cgroup this process is in, in the hierarchy mounted at `mount` that
// holds `controller` (from /proc/self/cgroup lines "id:controller,...:/path"), or "".
std::string OwnProcsFile(const std::string& mount, const std::string& controller) {
  auto text = ReadFile("/proc/self/cgroup");
  if (!text) return "";
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(pos, end - pos);
    pos = end + 1;
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    std::string controllers = "," + line.substr(c1 + 1, c2 - c1 - 1) + ",";
    if (controllers.find("," + controller + ",") == std::string::npos) continue;
    return JoinPath(JoinPath(mount, line.substr(c2 + 1)), "cgroup.procs");
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<CgroupManager>> V1Manager::Create(const HierarchyInfo& info,
                                                         const std::vector<std::string>& parent,
                                                         ManagerOptions options) {
  std::vector<V1Dir> parents = V1Hierarchies(info);
  if (parents.empty()) {
    return Error(ErrorCode::kUnsupported,
                 "cgroup v1: none of memory, cpu, cpuacct, pids, "
                 "freezer is mounted");
  }
  for (auto& p : parents) {
    for (const auto& component : parent) {
      p.dir = JoinPath(p.dir, component);
      RETURN_IF_ERROR(EnsureDir(p.dir, HooksFrom(options)));
      // A parent that already has children keeps its setting; each cgroup's own limit
      // still holds then, only nesting below it is affected (and checked at creation).
      if (Has(p.controllers, "memory")) (void)EnsureMemoryHierarchy(p.dir);
    }
  }
  std::string own_procs;
  if (options.fs_root_override.empty()) {
    // Any hierarchy will do (the rwsem is global); prefer one whose migration has no side
    // effects at all.
    for (const char* controller : {"freezer", "pids", "cpuacct", "cpu", "memory"}) {
      for (const auto& [c, mount] : info.v1_mounts) {
        if (c == controller && own_procs.empty()) own_procs = OwnProcsFile(mount, c);
      }
    }
  }
  return std::unique_ptr<CgroupManager>(
      new V1Manager(std::move(options), std::move(parents), std::move(own_procs)));
}

std::jthread V1Manager::WarmUpAttach() {
  if (own_procs_.empty()) return {};
  // The thread starts with every signal blocked, so that a SIGINT or SIGTERM meant for
  // the supervisor (which takes them through a signalfd) cannot land on it instead.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  std::jthread thread([path = own_procs_] { (void)WriteFile(path, "0"); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return thread;
}

Result<std::unique_ptr<Cgroup>> V1Manager::CreateCgroup(const std::string& name) {
  ASSIGN_OR_RETURN(auto cg, V1Cgroup::Make(parents_, name, HooksFrom(options_)));
  return std::unique_ptr<Cgroup>(std::move(cg));
}

Result<std::unique_ptr<Cgroup>> V1Manager::OpenCgroup(const std::string& name) {
  RETURN_IF_ERROR(ValidateName(name, "cgroup name"));
  std::vector<V1Dir> dirs;
  for (const auto& p : parents_) {
    std::string dir = JoinPath(p.dir, name);
    if (!PathExists(dir)) {
      return Error(ErrorCode::kNotFound, "cgroup '" + name + "' not found: " + dir, ENOENT);
    }
    dirs.push_back({dir, p.controllers});
  }
  ASSIGN_OR_RETURN(auto cg, V1Cgroup::Open(std::move(dirs), name, HooksFrom(options_)));
  return std::unique_ptr<Cgroup>(std::move(cg));
}

Result<std::vector<std::string>> V1Manager::ListCgroups() {
  std::vector<std::string> out;
  for (const auto& p : parents_) {
    ASSIGN_OR_RETURN(auto names, ListSubdirs(p.dir));
    out.insert(out.end(), names.begin(), names.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::unique_ptr<Cgroup>> V1Manager::OpenForCleanup(const std::string& name) {
  RETURN_IF_ERROR(ValidateName(name, "cgroup name"));
  std::vector<V1Dir> dirs;
  for (const auto& p : parents_) {
    std::string dir = JoinPath(p.dir, name);
    if (PathExists(dir)) dirs.push_back({dir, p.controllers});
  }
  if (dirs.empty()) return Error(ErrorCode::kNotFound, "cgroup '" + name + "' not found");
  ASSIGN_OR_RETURN(auto cg, V1Cgroup::Open(std::move(dirs), name, HooksFrom(options_)));
  return std::unique_ptr<Cgroup>(std::move(cg));
}

}  // namespace corral::cgroups::internal
