// The cgroup v2 driver: one directory per cgroup in the unified hierarchy. Internal to
// cgroups/; CgroupManager::Create picks it.
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

// The controllers corral enables for its cgroups.
inline const std::vector<std::string> kV2Controllers = {"memory", "cpu", "pids"};

// Enables each of `wanted` that `dir` offers (cgroup.controllers) in its
// cgroup.subtree_control, writing only what is not enabled yet.
Status V2EnableControllers(const std::string& dir, const std::vector<std::string>& wanted);

class V2Cgroup : public Cgroup {
 public:
  // Opens the existing directory `dir` (kNotFound if missing) and takes ownership of it.
  static Result<std::unique_ptr<V2Cgroup>> Open(const std::string& dir, const std::string& name,
                                                FsHooks hooks);
  ~V2Cgroup() override;

  const std::string& name() const override { return name_; }
  std::vector<std::string> paths() const override { return {dir_}; }
  Result<std::vector<std::string>> ApplyLimits(const Limits& limits, bool allow_missing) override;
  int clone_into_fd() const override { return dir_fd_.get(); }
  std::vector<int> attach_fds() const override { return {procs_fd_.get()}; }
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
  V2Cgroup(std::string dir, std::string name, UniqueFd dir_fd, UniqueFd procs_fd, FsHooks hooks)
      : dir_(std::move(dir)),
        name_(std::move(name)),
        dir_fd_(std::move(dir_fd)),
        procs_fd_(std::move(procs_fd)),
        hooks_(std::move(hooks)) {}

  Result<bool> Populated() const;
  Status KillByFreezing();
  // Whether processes sit in this cgroup itself (not only below it).
  Result<bool> HoldsProcesses() const;
  // This cgroup was made without controllers under `parent_dir`, which holds processes:
  // its memory and pids figures are the parent's, its OOM kills and limit hits counted
  // from now (CreateChild).
  Status TakeFiguresFromParent(const std::string& parent_dir);

  std::string dir_;
  std::string name_;
  UniqueFd dir_fd_;
  UniqueFd procs_fd_;
  FsHooks hooks_;
  bool released_ = false;
  bool destroyed_ = false;
  mutable StatFiles stat_files_;  // ReadStats() reads through it
  std::string figures_dir_;       // where memory and pids figures are read: dir_ or a parent's
  int64_t oom_kills_base_ = 0;    // the figures_dir_'s counts when this cgroup was made
  int64_t memory_max_base_ = 0;
  int64_t pids_max_base_ = 0;
};

class V2Manager : public ManagerBase {
 public:
  // Creates `<mount>/<parent...>` as needed and enables the controllers on the way down.
  static Result<std::unique_ptr<CgroupManager>> Create(const HierarchyInfo& info,
                                                       const std::vector<std::string>& parent,
                                                       ManagerOptions options);

  Driver driver() const override { return Driver::kV2; }
  Result<std::unique_ptr<Cgroup>> CreateCgroup(const std::string& name) override;
  Result<std::unique_ptr<Cgroup>> OpenCgroup(const std::string& name) override;

 protected:
  Result<std::vector<std::string>> ListCgroups() override;
  Result<std::unique_ptr<Cgroup>> OpenForCleanup(const std::string& name) override;

 private:
  V2Manager(ManagerOptions options, std::string parent_dir)
      : ManagerBase(std::move(options)), parent_dir_(std::move(parent_dir)) {}

  std::string parent_dir_;
};

}  // namespace corral::cgroups::internal
