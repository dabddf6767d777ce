// cgroups: detection from a fake mount table, driver selection, names and orphan
// selection. No root needed; everything lives in a temp dir.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "base/files.h"
#include "cgroups/cgroup.h"
#include "cgroups/internal.h"
#include "cgroups/v1_driver.h"
#include "tests/support/temp_dir.h"

namespace corral::cgroups {
namespace {

using internal::KernelAtLeast;
using internal::ParseMountinfo;
using internal::V1Controllers;

// This host's layout (Debian 12, hybrid): v1 controllers, v2 at unified without any.
constexpr char kHybridMountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

constexpr char kPureV2Mountinfo[] =
    "22 1 0:21 / / rw - ext4 /dev/vda1 rw\n"
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

constexpr char kComountedMountinfo[] =
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:2 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n";

class DetectTest : public ::testing::Test {
 protected:
  ManagerOptions Options(const std::string& mountinfo) {
    EXPECT_TRUE(dir_.WriteFile("mountinfo", mountinfo));
    ManagerOptions o;
    o.mountinfo_path = dir_.Join("mountinfo");
    o.fs_root_override = dir_.path();
    o.kernel_release = "6.1.0-57-cloud-amd64";
    return o;
  }
  void File(const std::string& rel, const std::string& content) {
    size_t slash = rel.rfind('/');
    ASSERT_TRUE(dir_.MakeDirs(rel.substr(0, slash)));
    ASSERT_TRUE(dir_.WriteFile(rel, content));
  }
  std::string Mount(const HierarchyInfo& info, const std::string& controller) {
    for (const auto& [c, m] : info.v1_mounts) {
      if (c == controller) return m;
    }
    return "";
  }

  test::TempDir dir_;
};

TEST_F(DetectTest, HybridHostPicksV1) {
  ManagerOptions o = Options(kHybridMountinfo);
  File("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
  File("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
  auto info = Detect(o);
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_TRUE(info->v2_mounted);
  EXPECT_EQ(info->v2_mount, dir_.Join("sys/fs/cgroup/unified"));
  EXPECT_EQ(info->v2_controllers, std::vector<std::string>{"hugetlb"});
  EXPECT_EQ(Mount(*info, "memory"), dir_.Join("sys/fs/cgroup/memory"));
  EXPECT_EQ(Mount(*info, "cpu"), dir_.Join("sys/fs/cgroup/cpu"));
  EXPECT_EQ(Mount(*info, "cpuacct"), dir_.Join("sys/fs/cgroup/cpuacct"));
  EXPECT_EQ(Mount(*info, "pids"), dir_.Join("sys/fs/cgroup/pids"));
  EXPECT_EQ(Mount(*info, "freezer"), dir_.Join("sys/fs/cgroup/freezer"));
  EXPECT_EQ(info->v1_mounts.size(), 5u) << "name=systemd must be skipped";
  ASSERT_TRUE(info->driver.has_value()) << info->unusable_reason;
  EXPECT_EQ(*info->driver, Driver::kV1);
  EXPECT_FALSE(info->clone_into_cgroup);
  EXPECT_STREQ(DriverName(*info->driver), "v1");
}

TEST_F(DetectTest, PureV2PicksV2WithCloneIntoCgroup) {
  ManagerOptions o = Options(kPureV2Mountinfo);
  File("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
  auto info = Detect(o);
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_EQ(info->v2_mount, dir_.Join("sys/fs/cgroup"));
  EXPECT_TRUE(info->v1_mounts.empty());
  ASSERT_TRUE(info->driver.has_value()) << info->unusable_reason;
  EXPECT_EQ(*info->driver, Driver::kV2);
  EXPECT_STREQ(DriverName(Driver::kV2), "v2");
  EXPECT_TRUE(info->clone_into_cgroup);

  o.kernel_release = "5.4.0-150-generic";
  info = Detect(o);
  ASSERT_TRUE(info);
  EXPECT_EQ(*info->driver, Driver::kV2);
  EXPECT_FALSE(info->clone_into_cgroup) << "CLONE_INTO_CGROUP needs 5.7";
}

TEST_F(DetectTest, ComountedCpuCpuacctShareOneHierarchy) {
  ManagerOptions o = Options(kComountedMountinfo);
  File("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  auto info = Detect(o);
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_FALSE(info->v2_mounted);
  EXPECT_EQ(Mount(*info, "cpu"), dir_.Join("sys/fs/cgroup/cpu,cpuacct"));
  EXPECT_EQ(Mount(*info, "cpuacct"), Mount(*info, "cpu"));
  ASSERT_TRUE(info->driver.has_value()) << info->unusable_reason;
  EXPECT_EQ(*info->driver, Driver::kV1);
  // One directory per hierarchy: memory, cpu+cpuacct, pids, freezer.
  auto dirs = internal::V1Hierarchies(*info);
  ASSERT_EQ(dirs.size(), 4u);
  EXPECT_EQ(dirs[1].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
}

TEST_F(DetectTest, NothingUsableExplainsWhatIsMissing) {
  // v2 without controllers; v1 with only memory and cpu.
  ManagerOptions o = Options(
      "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n");
  File("sys/fs/cgroup/unified/cgroup.controllers", "");
  auto info = Detect(o);
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_FALSE(info->driver.has_value());
  EXPECT_NE(info->unusable_reason.find("lacks controllers memory, cpu, pids"), std::string::npos)
      << info->unusable_reason;
  EXPECT_NE(info->unusable_reason.find("pids, freezer"), std::string::npos)
      << info->unusable_reason;

  auto mgr = CgroupManager::Create(o);
  ASSERT_FALSE(mgr);
  EXPECT_EQ(mgr.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(mgr.error().message(), info->unusable_reason);
}

TEST_F(DetectTest, V1WithoutCfsBandwidthIsNotPickedByAuto) {
  ManagerOptions o = Options(kHybridMountinfo);
  File("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
  ASSERT_TRUE(dir_.MakeDirs("sys/fs/cgroup/cpu"));
  auto info = Detect(o);
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->driver.has_value());
  EXPECT_NE(info->unusable_reason.find("cpu.cfs_quota_us"), std::string::npos)
      << info->unusable_reason;
}

TEST_F(DetectTest, ExplicitDriverMustExist) {
  ManagerOptions o = Options(kComountedMountinfo);
  o.driver = "v2";
  auto info = Detect(o);
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->driver.has_value());
  EXPECT_NE(info->unusable_reason.find("not mounted"), std::string::npos);

  o.driver = "v3";
  auto bad = Detect(o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("'v3'"), std::string::npos);

  // Explicit v2 on the hybrid host is allowed (it has cgroup.kill and no limits).
  o = Options(kHybridMountinfo);
  o.driver = "v2";
  File("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
  info = Detect(o);
  ASSERT_TRUE(info);
  ASSERT_TRUE(info->driver.has_value()) << info->unusable_reason;
  EXPECT_EQ(*info->driver, Driver::kV2);
}

TEST_F(DetectTest, MissingMountTableIsAnErrorNamingThePath) {
  ManagerOptions o;
  o.mountinfo_path = dir_.Join("no-such-mountinfo");
  auto info = Detect(o);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message().find("no-such-mountinfo"), std::string::npos);
}

TEST(MountinfoTest, ParsesOptionalFieldsAndEscapes) {
  auto m = ParseMountinfo(
      "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 shared:2 - cgroup cg "
      "rw,memory\n");
  ASSERT_TRUE(m) << m.error().message();
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ((*m)[0].mount_point, "/mnt/with space");
  EXPECT_EQ((*m)[0].fstype, "cgroup");
  EXPECT_EQ((*m)[0].super_options, "rw,memory");

  auto bad = ParseMountinfo("1 2 3\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("line 1"), std::string::npos);
}

TEST(MountinfoTest, V1ControllersDropsOptionsAndNames) {
  EXPECT_EQ(V1Controllers("rw,cpu,cpuacct"), (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(V1Controllers("rw,name=systemd"), std::vector<std::string>{});
  EXPECT_EQ(V1Controllers("rw,xattr,noprefix,release_agent=/x,cpuset"),
            std::vector<std::string>{"cpuset"});
}

TEST(MountinfoTest, KernelVersionCompare) {
  EXPECT_TRUE(KernelAtLeast("6.18.44-fc", 5, 7));
  EXPECT_TRUE(KernelAtLeast("5.7.0", 5, 7));
  EXPECT_FALSE(KernelAtLeast("5.6.19", 5, 7));
  EXPECT_FALSE(KernelAtLeast("4.19.0", 5, 7));
  EXPECT_FALSE(KernelAtLeast("", 5, 7));
}

TEST(NamesTest, Validation) {
  EXPECT_TRUE(internal::IsValidName("run-1-2"));
  EXPECT_TRUE(internal::IsValidName("sbx_A.b-9"));
  EXPECT_TRUE(internal::IsValidName(std::string(128, 'a')));
  EXPECT_FALSE(internal::IsValidName(std::string(129, 'a')));
  for (const char* bad : {"", ".", "..", "a/b", "../x", "a b", "x\n", "caf\xc3\xa9", "a*"}) {
    EXPECT_FALSE(internal::IsValidName(bad)) << bad;
  }
  auto st = internal::ValidateName("../etc", "cgroup name");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message().find("cgroup name '../etc'"), std::string::npos);
}

TEST(NamesTest, ParentComponents) {
  auto p = internal::ParentComponents("/user.slice/corral//x");
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, (std::vector<std::string>{"user.slice", "corral", "x"}));
  for (const char* bad : {"", "/", "a/../b", "..", "a/b c"}) {
    auto r = internal::ParentComponents(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("cgroups.parent"), std::string::npos);
  }
}

TEST(NamesTest, OneShotNames) {
  std::string a = CgroupManager::OneShotName();
  std::string b = CgroupManager::OneShotName();
  EXPECT_NE(a, b);
  EXPECT_EQ(internal::ParseOneShotName(a), getpid());
  EXPECT_EQ(a.rfind("run-" + std::to_string(getpid()) + "-", 0), 0u);
  EXPECT_TRUE(internal::IsValidName(a));

  EXPECT_EQ(internal::ParseOneShotName("run-123-4"), 123);
  for (const char* other : {"sbx-x", "run-abc-1", "run-12", "run--1", "run-0-1", "run-1-2-3",
                            "run-1-", "xrun-1-1", "run-99999999999-1"}) {
    EXPECT_EQ(internal::ParseOneShotName(other), std::nullopt) << other;
  }
}

TEST(NamesTest, SelectOrphansUsesTheLivenessTest) {
  std::vector<std::string> names = {"run-10-1", "run-10-2", "run-20-1", "sbx-x", "run-x-1"};
  std::set<pid_t> asked;
  auto orphans = internal::SelectOrphans(names, [&](pid_t pid) {
    asked.insert(pid);
    return pid == 20;
  });
  EXPECT_EQ(orphans, (std::vector<std::string>{"run-10-1", "run-10-2"}));
  EXPECT_EQ(asked, (std::set<pid_t>{10, 20}));
}

TEST(NamesTest, DefaultLivenessTest) {
  EXPECT_TRUE(internal::IsLiveCorral(getpid())) << "a process named like us counts";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  // A zombie is not alive.
  usleep(100 * 1000);
  EXPECT_FALSE(internal::IsLiveCorral(child));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(internal::IsLiveCorral(child));
  auto init_comm = ReadFile("/proc/1/comm");
  auto self_comm = ReadFile("/proc/self/comm");
  if (init_comm && self_comm && Trim(*init_comm).rfind("corral", 0) != 0 &&
      *init_comm != *self_comm) {
    EXPECT_FALSE(internal::IsLiveCorral(1)) << "pid 1 is not a corral";
  }
}

TEST(LimitsTest, ValidationAndCpuQuota) {
  Limits l;
  l.memory_bytes = 0;
  auto st = internal::ValidateLimits(l);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("memory limit"), std::string::npos);
  l = Limits{};
  l.cpus = -1;
  EXPECT_FALSE(internal::ValidateLimits(l));
  l.cpus = 0.5;
  l.pids = 0;
  EXPECT_FALSE(internal::ValidateLimits(l));
  l.pids = 10;
  EXPECT_TRUE(internal::ValidateLimits(l));

  EXPECT_EQ(internal::CpuQuotaUsec(0.2), 20000);
  EXPECT_EQ(internal::CpuQuotaUsec(2), 200000);
  EXPECT_EQ(internal::CpuQuotaUsec(0.001), 1000) << "kernel minimum is 1 ms";
}

TEST(LimitsTest, V1MemswOrderKeepsMemswAboveMemory) {
  // Fresh cgroup (unlimited): memory first, then memsw.
  EXPECT_FALSE(internal::V1MemswFirst(INT64_MAX, 64 << 20));
  // Lowering 128M -> 64M: memory first.
  EXPECT_FALSE(internal::V1MemswFirst(128 << 20, 64 << 20));
  // Raising 64M -> 128M: memsw first.
  EXPECT_TRUE(internal::V1MemswFirst(64 << 20, 128 << 20));
}

}  // namespace
}  // namespace corral::cgroups
