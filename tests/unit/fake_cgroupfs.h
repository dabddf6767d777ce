// A fake cgroupfs for the driver unit tests: hierarchies under a temp dir, described by a
// fake mountinfo, whose interface files are regular files created by the mkdir hook the
// way the kernel would. Shared by cgroups_v1_driver_test.cc and cgroups_v2_driver_test.cc.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "base/files.h"
#include "cgroups/cgroup.h"
#include "cgroups/internal.h"
#include "tests/support/temp_dir.h"

namespace corral::cgroups::fakes {

using internal::JoinPath;
using internal::PathExists;

// A fake cgroupfs: hierarchies under a temp dir, described by a mountinfo.
class FakeCgroupFs {
 public:
  struct Hierarchy {
    std::string mount;  // e.g. "/sys/fs/cgroup/memory"
    bool v2;
    std::vector<std::string> controllers;  // v1: mounted; v2: offered by the root
  };

  explicit FakeCgroupFs(std::vector<Hierarchy> hierarchies) : hier_(std::move(hierarchies)) {
    std::string mountinfo;
    int id = 30;
    for (const auto& h : hier_) {
      std::string opts = "rw";
      for (const auto& c : h.controllers) opts += "," + c;
      mountinfo += std::to_string(id++) + " 1 0:1 / " + h.mount + " rw - " +
                   (h.v2 ? "cgroup2 cgroup2 rw" : "cgroup cgroup " + opts) + "\n";
      EXPECT_TRUE(dir_.MakeDirs(h.mount.substr(1)));
      EXPECT_TRUE(Populate(Path(h.mount)));
      if (h.v2) Write(h.mount + "/cgroup.controllers", Join(h.controllers));
    }
    EXPECT_TRUE(dir_.WriteFile("mountinfo", mountinfo));
  }

  ManagerOptions Options(const std::string& driver = "auto") {
    ManagerOptions o;
    o.driver = driver;
    o.mountinfo_path = dir_.Join("mountinfo");
    o.fs_root_override = dir_.path();
    o.kernel_release = "6.1.0";
    o.mkdir_hook = [this](const std::string& d) { return Populate(d); };
    o.rmdir_hook = [](const std::string& d) { return Rmdir(d); };
    return o;
  }

  // Absolute path of a path inside the fake (given from its "/").
  std::string Path(const std::string& p) const { return dir_.path() + p; }
  std::string Read(const std::string& p) const {
    auto r = ReadFile(Path(p));
    return r ? Trim(*r) : "<missing " + p + ">";
  }
  void Write(const std::string& p, const std::string& content) {
    ASSERT_TRUE(dir_.WriteFile(p.substr(1), content));
  }
  void Remove(const std::string& p) { ASSERT_EQ(::unlink(Path(p).c_str()), 0) << p; }
  bool Exists(const std::string& p) const { return PathExists(Path(p)); }

 private:
  static std::string Join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
    return out;
  }

  // What the kernel creates in a new cgroup directory.
  Status Populate(const std::string& dir) {
    const Hierarchy* h = nullptr;
    for (const auto& c : hier_) {
      if (dir.rfind(Path(c.mount), 0) == 0 && (!h || c.mount.size() > h->mount.size())) h = &c;
    }
    if (!h) return Error(ErrorCode::kInternal, "fake cgroupfs: no hierarchy for " + dir);
    std::map<std::string, std::string> files = {{"cgroup.procs", ""}};
    std::vector<std::string> controllers = h->controllers;
    if (h->v2) {
      if (dir != Path(h->mount)) {
        // A child offers what its parent enabled in cgroup.subtree_control.
        auto parent = ReadFile(JoinPath(dir.substr(0, dir.rfind('/')), "cgroup.subtree_control"));
        controllers.clear();
        for (auto w : internal::SplitWords(parent ? *parent : "")) {
          controllers.push_back(w[0] == '+' ? w.substr(1) : w);
        }
      }
      files.insert({{"cgroup.controllers", Join(controllers)},
                    {"cgroup.subtree_control", ""},
                    {"cgroup.events", "populated 0\nfrozen 0\n"},
                    {"cgroup.kill", ""},
                    {"cgroup.freeze", "0"}});
    }
    for (const auto& c : controllers) {
      if (c == "memory" && h->v2) {
        files.insert({{"memory.max", "max"},
                      {"memory.swap.max", "max"},
                      {"memory.current", "0"},
                      {"memory.peak", "0"},
                      {"memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"}});
      } else if (c == "memory") {
        files.insert({{"memory.limit_in_bytes", "9223372036854771712"},
                      {"memory.memsw.limit_in_bytes", "9223372036854771712"},
                      {"memory.usage_in_bytes", "0"},
                      {"memory.max_usage_in_bytes", "0"},
                      {"memory.failcnt", "0"},
                      {"memory.use_hierarchy", "1"},
                      {"memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"}});
      } else if (c == "cpu" && h->v2) {
        files.insert({{"cpu.max", "max 100000"},
                      {"cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n"}});
      } else if (c == "cpu") {
        files.insert({{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", "-1"}});
      } else if (c == "cpuacct") {
        files.insert({{"cpuacct.usage_user", "0"},
                      {"cpuacct.usage_sys", "0"},
                      {"cpuacct.stat", "user 0\nsystem 0\n"}});
      } else if (c == "pids" && dir != Path(h->mount)) {
        files.insert({{"pids.max", "max"}, {"pids.current", "0"}, {"pids.events", "max 0\n"}});
      } else if (c == "freezer" && dir != Path(h->mount)) {
        files.insert({{"freezer.state", "THAWED"}});
      }
    }
    for (const auto& [name, content] : files) {
      RETURN_IF_ERROR(dir_.WriteFile(JoinPath(dir, name).substr(dir_.path().size() + 1), content));
    }
    return Ok();
  }

  // rmdir as cgroupfs does it: EBUSY with processes inside, interface files go away.
  static Status Rmdir(const std::string& dir) {
    auto procs = ReadFile(JoinPath(dir, "cgroup.procs"));
    if (!procs && procs.error().sys_errno() == ENOENT && !PathExists(dir)) {
      return Error::FromErrno(ENOENT, dir);
    }
    if (procs && !Trim(*procs).empty()) return Error::FromErrno(EBUSY, dir);
    auto subdirs = internal::ListSubdirs(dir);
    if (!subdirs || !subdirs->empty()) return Error::FromErrno(ENOTEMPTY, dir);
    RETURN_IF_ERROR(test::RemoveTree(dir));
    return Ok();
  }

  test::TempDir dir_;
  std::vector<Hierarchy> hier_;
};

inline FakeCgroupFs ComountedV1() {
  return FakeCgroupFs({{"/sys/fs/cgroup/memory", false, {"memory"}},
                       {"/sys/fs/cgroup/cpu,cpuacct", false, {"cpu", "cpuacct"}},
                       {"/sys/fs/cgroup/pids", false, {"pids"}},
                       {"/sys/fs/cgroup/freezer", false, {"freezer"}}});
}

inline FakeCgroupFs PureV2(std::vector<std::string> controllers = {"cpuset", "cpu", "io", "memory",
                                                                   "pids"}) {
  return FakeCgroupFs({{"/sys/fs/cgroup", true, std::move(controllers)}});
}

inline Limits SomeLimits() {
  Limits l;
  l.memory_bytes = 64 << 20;
  l.cpus = 0.5;
  l.pids = 32;
  return l;
}

inline std::unique_ptr<CgroupManager> MustCreate(ManagerOptions o) {
  auto mgr = CgroupManager::Create(o);
  EXPECT_TRUE(mgr) << mgr.error().message();
  return mgr ? std::move(*mgr) : nullptr;
}

}  // namespace corral::cgroups::fakes
