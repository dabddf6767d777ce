// The cgroup v2 driver against a fake cgroupfs (tests/unit/fake_cgroupfs.h): what it
// writes, parses, creates and removes. Killing cannot be faked; the VM tests cover it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "base/files.h"
#include "cgroups/cgroup.h"
#include "cgroups/internal.h"
#include "tests/unit/fake_cgroupfs.h"

namespace corral::cgroups {
namespace {

using fakes::ComountedV1;
using fakes::FakeCgroupFs;
using fakes::MustCreate;
using fakes::PureV2;
using fakes::SomeLimits;
using internal::JoinPath;
using internal::PathExists;

// ---- v2 ----

TEST(CgroupsV2Test, EnablesControllersAndWritesLimits) {
  FakeCgroupFs fs = PureV2();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  EXPECT_EQ(mgr->driver(), Driver::kV2);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/cgroup.subtree_control"), "+memory +cpu +pids");
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/corral/cgroup.subtree_control"), "+memory +cpu +pids");
  auto cg = mgr->CreateCgroup("run-1-1");
  ASSERT_TRUE(cg) << cg.error().message();
  EXPECT_EQ((*cg)->paths(), std::vector<std::string>{fs.Path("/sys/fs/cgroup/corral/run-1-1")});
  EXPECT_GE((*cg)->clone_into_fd(), 0);
  ASSERT_EQ((*cg)->attach_fds().size(), 1u);
  EXPECT_GE((*cg)->attach_fds()[0], 0);

  Limits l = SomeLimits();
  l.cpus = 0.2;
  auto warnings = (*cg)->ApplyLimits(l, false);
  ASSERT_TRUE(warnings) << warnings.error().message();
  EXPECT_TRUE(warnings->empty());
  const std::string d = "/sys/fs/cgroup/corral/run-1-1/";
  EXPECT_EQ(fs.Read(d + "memory.max"), "67108864");
  EXPECT_EQ(fs.Read(d + "memory.swap.max"), "0");
  EXPECT_EQ(fs.Read(d + "cpu.max"), "20000 100000");
  EXPECT_EQ(fs.Read(d + "pids.max"), "32");

  fs.Remove(d + "memory.swap.max");
  warnings = (*cg)->ApplyLimits(l, false);
  ASSERT_TRUE(warnings);
  ASSERT_EQ(warnings->size(), 1u);
  EXPECT_NE((*warnings)[0].find("memory.swap.max missing"), std::string::npos);

  ASSERT_TRUE((*cg)->Destroy());
  EXPECT_FALSE(fs.Exists(d));
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/corral/run-1-1/cgroup.kill"),
            "<missing /sys/fs/cgroup/corral/run-1-1/cgroup.kill>");
}

TEST(CgroupsV2Test, LeavesEnabledControllersAlone) {
  FakeCgroupFs fs = PureV2();
  fs.Write("/sys/fs/cgroup/cgroup.subtree_control", "cpu memory pids io");
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/cgroup.subtree_control"), "cpu memory pids io");
}

TEST(CgroupsV2Test, MissingControllerIsUnsupportedUnlessAllowed) {
  FakeCgroupFs fs = PureV2({"memory", "pids"});  // no cpu: auto would refuse
  EXPECT_FALSE(CgroupManager::Create(fs.Options()));
  auto mgr = MustCreate(fs.Options("v2"));
  ASSERT_TRUE(mgr);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/cgroup.subtree_control"), "+memory +pids");
  auto cg = mgr->CreateCgroup("a");
  ASSERT_TRUE(cg);
  auto strict = (*cg)->ApplyLimits(SomeLimits(), false);
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(strict.error().message(),
            "cpu limit: controller 'cpu' not available in cgroup v2 cgroup " +
                fs.Path("/sys/fs/cgroup/corral/a"));
  auto lax = (*cg)->ApplyLimits(SomeLimits(), true);
  ASSERT_TRUE(lax);
  ASSERT_EQ(lax->size(), 1u);
  EXPECT_NE((*lax)[0].find("(skipped)"), std::string::npos);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/corral/a/pids.max"), "32");
}

TEST(CgroupsV2Test, ParsesStats) {
  FakeCgroupFs fs = PureV2();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto cg = mgr->CreateCgroup("s");
  ASSERT_TRUE(cg);
  const std::string d = "/sys/fs/cgroup/corral/s/";
  fs.Write(d + "memory.current", "8192\n");
  fs.Write(d + "memory.peak", "33554432\n");
  fs.Write(d + "memory.events", "low 0\nhigh 0\nmax 35\noom 1\noom_kill 1\noom_group_kill 0\n");
  fs.Write(d + "cpu.stat", "usage_usec 300\nuser_usec 200\nsystem_usec 100\nnr_periods 4\n");
  fs.Write(d + "pids.current", "10\n");
  fs.Write(d + "pids.peak", "10\n");
  fs.Write(d + "pids.events", "max 1\n");
  auto s = (*cg)->ReadStats();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->memory_current_bytes, 8192);
  EXPECT_EQ(s->memory_peak_bytes, 33554432);
  EXPECT_EQ(s->oom_kills, 1);
  EXPECT_TRUE(s->memory_limit_hit);
  EXPECT_EQ(s->cpu_user_usec, 200);
  EXPECT_EQ(s->cpu_system_usec, 100);
  EXPECT_EQ(s->pids_current, 10);
  EXPECT_EQ(s->pids_peak, 10);
  EXPECT_TRUE(s->pids_limit_hit);

  fs.Remove(d + "memory.peak");
  fs.Remove(d + "pids.peak");
  s = (*cg)->ReadStats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->memory_peak_bytes, std::nullopt);
  EXPECT_EQ(s->pids_peak, std::nullopt);
}

TEST(CgroupsV2Test, KillAllUsesCgroupKillAndWaitsForEmpty) {
  FakeCgroupFs fs = PureV2();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto cg = mgr->CreateCgroup("k");
  ASSERT_TRUE(cg);
  ASSERT_TRUE((*cg)->KillAll());
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/corral/k/cgroup.kill"), "1");
}

TEST(CgroupsV2Test, ChildGetsControllersFromItsParent) {
  FakeCgroupFs fs = PureV2();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto sbx = mgr->CreateCgroup("sbx-1");
  ASSERT_TRUE(sbx);
  auto child = (*sbx)->CreateChild("exec-1");
  ASSERT_TRUE(child) << child.error().message();
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/corral/sbx-1/cgroup.subtree_control"), "+memory +cpu +pids");
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/corral/sbx-1/exec-1/cgroup.controllers"), "memory cpu pids");
  ASSERT_TRUE((*child)->ApplyLimits(SomeLimits(), false));
  child->reset();
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/corral/sbx-1/exec-1"));
  EXPECT_TRUE(fs.Exists("/sys/fs/cgroup/corral/sbx-1"));
}

TEST(CgroupsV2Test, AbsoluteParentInsideTheMount) {
  FakeCgroupFs fs = PureV2();
  ManagerOptions o = fs.Options();
  o.parent = fs.Path("/sys/fs/cgroup/deleg.slice/corral");
  auto mgr = MustCreate(o);
  ASSERT_TRUE(mgr);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/deleg.slice/cgroup.subtree_control"), "+memory +cpu +pids");
  auto cg = mgr->CreateCgroup("x");
  ASSERT_TRUE(cg);
  EXPECT_EQ((*cg)->paths()[0], fs.Path("/sys/fs/cgroup/deleg.slice/corral/x"));

  o.parent = "/deleg.slice/corral";  // the same, as a cgroup path
  auto mgr2 = MustCreate(o);
  ASSERT_TRUE(mgr2);
  EXPECT_FALSE(mgr2->CreateCgroup("x")) << "already exists";

  o.parent = "../up";
  auto bad = CgroupManager::Create(o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
}

TEST(CgroupsV2Test, ReapOrphans) {
  FakeCgroupFs fs = PureV2();
  ManagerOptions o = fs.Options();
  o.is_live_corral = [](pid_t) { return false; };
  auto mgr = MustCreate(o);
  ASSERT_TRUE(mgr);
  for (const char* n : {"run-7-1", "sbx-x"}) {
    auto cg = mgr->CreateCgroup(n);
    ASSERT_TRUE(cg);
    (*cg)->Release();
  }
  auto removed = mgr->ReapOrphans();
  ASSERT_TRUE(removed) << removed.error().message();
  EXPECT_EQ(*removed, std::vector<std::string>{"run-7-1"});
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/corral/run-7-1"));
  EXPECT_TRUE(fs.Exists("/sys/fs/cgroup/corral/sbx-x"));
}

}  // namespace
}  // namespace corral::cgroups
