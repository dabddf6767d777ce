// Rootless mode's pure parts: reading /etc/subuid lines, the id maps built around the
// jail's uid, and the delegated-cgroup decision on fake cgroup trees.
#include "runtime/run/user_ns_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "runtime/run/user_cgroup.h"
#include "tests/support/temp_dir.h"

// Found by argument-dependent lookup from std::vector's ==.
namespace corral::jail {
static bool operator==(const IdMapping& a, const IdMapping& b) {
  return a.inside == b.inside && a.outside == b.outside && a.count == b.count;
}
}  // namespace corral::jail

namespace corral::runtime {
namespace {

TEST(SubordinateRange, FoundByNameOrByUidFirstMatchWins) {
  const std::string text = "alice:100000:65536\nbob:200000:1000\n1234:300000:10\nbob:9:9\n";
  auto bob = FindSubordinateRange(text, "bob", 999);
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->start, 200000u);
  EXPECT_EQ(bob->count, 1000u);
  auto by_uid = FindSubordinateRange(text, "carol", 1234);
  ASSERT_TRUE(by_uid);
  EXPECT_EQ(by_uid->start, 300000u);
  EXPECT_FALSE(FindSubordinateRange(text, "carol", 77));
  EXPECT_FALSE(FindSubordinateRange("", "alice", 1));
  EXPECT_FALSE(FindSubordinateRange("alice:x:10\nalice:5:0\n", "alice", 1)) << "bad lines skipped";
}

TEST(MapAround, SingleIdWithoutARange) {
  EXPECT_EQ(MapAround(1000, 4321, std::nullopt), (std::vector<jail::IdMapping>{{1000, 4321, 1}}));
}

TEST(MapAround, RangeFillsBelowAndAboveTheCallersId) {
  EXPECT_EQ(
      MapAround(1000, 4321, SubordinateRange{100000, 65536}),
      (std::vector<jail::IdMapping>{{1000, 4321, 1}, {0, 100000, 1000}, {1001, 101000, 64536}}));
  // A range smaller than the jail's uid: only the low ids.
  EXPECT_EQ(MapAround(1000, 4321, SubordinateRange{100000, 10}),
            (std::vector<jail::IdMapping>{{1000, 4321, 1}, {0, 100000, 10}}));
}

TEST(SkippedLimits, NamesEachLimitWithItsValue) {
  LimitsSpec l;
  l.memory_bytes = 64LL << 20;
  l.cpus = 0.5;
  l.pids = 32;
  EXPECT_EQ(SkippedLimits(l), "limits.memory (64 MiB), limits.cpus (0.5) and limits.pids (32)");
}

class DelegatedCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info_.v2_mounted = true;
    info_.v2_mount = dir_.path();
    info_.v2_controllers = {"cpuset", "cpu", "io", "memory", "pids"};
    ASSERT_TRUE(dir_.MakeDirs("user.slice/me.scope"));
    for (const char* f : {"cgroup.procs", "cgroup.subtree_control"}) {
      ASSERT_TRUE(dir_.WriteFile(std::string("user.slice/me.scope/") + f, ""));
    }
    ASSERT_TRUE(dir_.WriteFile("user.slice/me.scope/cgroup.controllers", "cpu memory pids\n"));
  }
  test::TempDir dir_;
  cgroups::HierarchyInfo info_;
};

TEST_F(DelegatedCgroupTest, OwnWritableCgroupWithTheControllersIsUsed) {
  auto found = cgroups::FindDelegatedCgroup(info_, "0::/user.slice/me.scope\n", ::geteuid());
  ASSERT_TRUE(found.dir) << found.why_not;
  EXPECT_EQ(*found.dir, dir_.Join("user.slice/me.scope"));
}

TEST_F(DelegatedCgroupTest, RefusedWhenNotOwnedOrMissingAController) {
  auto other = cgroups::FindDelegatedCgroup(info_, "0::/user.slice/me.scope\n", ::geteuid() + 1);
  EXPECT_FALSE(other.dir);
  EXPECT_NE(other.why_not.find("is not delegated to it"), std::string::npos) << other.why_not;
  ASSERT_TRUE(dir_.WriteFile("user.slice/me.scope/cgroup.controllers", "cpu memory\n"));
  auto no_pids = cgroups::FindDelegatedCgroup(info_, "0::/user.slice/me.scope\n", ::geteuid());
  EXPECT_FALSE(no_pids.dir);
  EXPECT_NE(no_pids.why_not.find("not given the pids controller"), std::string::npos)
      << no_pids.why_not;
}

TEST_F(DelegatedCgroupTest, HybridHostHasNoV2Memory) {
  info_.v2_controllers = {"hugetlb"};
  auto found = cgroups::FindDelegatedCgroup(info_, "0::/\n", ::geteuid());
  EXPECT_FALSE(found.dir);
  EXPECT_NE(found.why_not.find("the memory controller is not on cgroup v2 here"), std::string::npos)
      << found.why_not;
}

}  // namespace
}  // namespace corral::runtime
