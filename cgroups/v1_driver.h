// The cgroup v1 driver: one directory per cgroup in each of the memory, cpu, cpuacct,
// pids and freezer hierarchies (co-mounted controllers share one directory), acting as one
// cgroup. Internal to cgroups/; CgroupManager::Create picks it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "cgroups/cgroup.h"
#include "cgroups/internal.h"
#include "cgroups/manager_base.h"
#include "cgroups/stat_files.h"

namespace corral::cgroups::internal {

// The controllers corral uses on v1.
inline const std::vector<std::string> kV1Controllers = {"memory", "cpu", "cpuacct", "pids",
                                                        "freezer"};

// One hierarchy as used by a cgroup: its directory and the controllers mounted there.
struct V1Dir {
  std::string dir;
  std::vector<std::string> controllers;
};

// Groups the mounts of kV1Controllers by mount point (cpu,cpuacct -> one hierarchy).
std::vector<V1Dir> V1Hierarchies(const HierarchyInfo& info);

// memory.memsw.limit_in_bytes must stay >= memory.limit_in_bytes at every step, so when
// the new limit is above the current memory limit memsw is written first, else second.
bool V1MemswFirst(int64_t current_memory_limit, int64_t new_limit);

class V1Cgroup : public Cgroup {
 public:
  // Takes ownership of existing directories (one per hierarchy).
  static Result<std::unique_ptr<V1Cgroup>> Open(std::vector<V1Dir> dirs, const std::string& name,
                                                FsHooks hooks);
  // mkdir `<parent>/<name>` in each hierarchy (kAlreadyExists if any exists; rolls back).
  static Result<std::unique_ptr<V1Cgroup>> Make(const std::vector<V1Dir>& parents,
                                                const std::string& name, FsHooks hooks);
  ~V1Cgroup() override;

  const std::string& name() const override { return name_; }
  std::vector<std::string> paths() const override;
  Result<std::vector<std::string>> ApplyLimits(const Limits& limits, bool allow_missing) override;
  int clone_into_fd() const override { return -1; }
  std::vector<int> attach_fds() const override;
  Status AddProcess(pid_t pid) override;
  Result<Stats> ReadStats() const override;
  void KeepStatFilesOpen() override;
  Result<std::vector<pid_t>> Processes() const override;
  Status SignalAll(int sig) override;
  Status KillAll() override;
  Status Destroy() override;
  Status SetFrozen(bool frozen) override;
  Result<bool> Frozen() const override;
  Result<std::unique_ptr<Cgroup>> CreateChild(const std::string& name) override;
  void Release() override { released_ = true; }

 private:
  V1Cgroup(std::vector<V1Dir> dirs, std::string name, std::vector<UniqueFd> procs_fds,
           FsHooks hooks)
      : dirs_(std::move(dirs)),
        name_(std::move(name)),
        procs_fds_(std::move(procs_fds)),
        hooks_(std::move(hooks)) {}

  // Directory of the hierarchy holding `controller`, or nullptr.
  const std::string* DirOf(const std::string& controller) const;
  Status ApplyMemory(const Limits& limits, LimitReport& report);
  Status ApplyCpu(double cpus, LimitReport& report);
  Status KillRound(const std::string* freezer);
  Status RemoveIfEmptyFirst();  // Destroy's fast path: sets destroyed_ if it did it all

  std::vector<V1Dir> dirs_;
  std::string name_;
  std::vector<UniqueFd> procs_fds_;
  FsHooks hooks_;
  bool released_ = false;
  bool destroyed_ = false;
  mutable StatFiles stat_files_;  // ReadStats() reads through it
};

class V1Manager : public ManagerBase {
 public:
  // Creates `<mount>/<parent...>` in each hierarchy as needed.
  static Result<std::unique_ptr<CgroupManager>> Create(const HierarchyInfo& info,
                                                       const std::vector<std::string>& parent,
                                                       ManagerOptions options);

  Driver driver() const override { return Driver::kV1; }
  Result<std::unique_ptr<Cgroup>> CreateCgroup(const std::string& name) override;
  Result<std::unique_ptr<Cgroup>> OpenCgroup(const std::string& name) override;
  std::jthread WarmUpAttach() override;

 protected:
  Result<std::vector<std::string>> ListCgroups() override;
  Result<std::unique_ptr<Cgroup>> OpenForCleanup(const std::string& name) override;

 private:
  V1Manager(ManagerOptions options, std::vector<V1Dir> parents, std::string own_procs)
      : ManagerBase(std::move(options)),
        parents_(std::move(parents)),
        own_procs_(std::move(own_procs)) {}

  std::vector<V1Dir> parents_;
  std::string own_procs_;  // cgroup.procs of our own cgroup in one hierarchy, or ""
};

}  // namespace corral::cgroups::internal
