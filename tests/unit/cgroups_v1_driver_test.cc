// The cgroup v1 driver against a fake cgroupfs (tests/unit/fake_cgroupfs.h): what it
// writes, parses, creates and removes. Killing cannot be faked; the integration tests cover it.
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

TEST(CgroupsV1Test, CreatesOneDirectoryPerHierarchyAndWritesLimits) {
  FakeCgroupFs fs = ComountedV1();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  EXPECT_EQ(mgr->driver(), Driver::kV1);
  for (const char* h : {"memory", "cpu,cpuacct", "pids", "freezer"}) {
    EXPECT_TRUE(fs.Exists(std::string("/sys/fs/cgroup/") + h + "/corral")) << h;
  }
  auto cg = mgr->CreateCgroup("run-1-1");
  ASSERT_TRUE(cg) << cg.error().message();
  EXPECT_EQ((*cg)->name(), "run-1-1");
  ASSERT_EQ((*cg)->paths().size(), 4u);
  EXPECT_EQ((*cg)->paths()[1], fs.Path("/sys/fs/cgroup/cpu,cpuacct/corral/run-1-1"));
  EXPECT_EQ((*cg)->clone_into_fd(), -1);
  auto fds = (*cg)->attach_fds();
  ASSERT_EQ(fds.size(), 4u);
  for (int fd : fds) EXPECT_GE(fd, 0);

  auto warnings = (*cg)->ApplyLimits(SomeLimits(), false);
  ASSERT_TRUE(warnings) << warnings.error().message();
  EXPECT_TRUE(warnings->empty());
  const std::string mem = "/sys/fs/cgroup/memory/corral/run-1-1/";
  const std::string cpu = "/sys/fs/cgroup/cpu,cpuacct/corral/run-1-1/";
  EXPECT_EQ(fs.Read(mem + "memory.limit_in_bytes"), "67108864");
  EXPECT_EQ(fs.Read(mem + "memory.memsw.limit_in_bytes"), "67108864");
  EXPECT_EQ(fs.Read(cpu + "cpu.cfs_period_us"), "100000");
  EXPECT_EQ(fs.Read(cpu + "cpu.cfs_quota_us"), "50000");
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/pids/corral/run-1-1/pids.max"), "32");

  // Raising an existing limit (memsw must go first on a real kernel).
  Limits more = SomeLimits();
  more.memory_bytes = 128 << 20;
  ASSERT_TRUE((*cg)->ApplyLimits(more, false));
  EXPECT_EQ(fs.Read(mem + "memory.limit_in_bytes"), "134217728");
  EXPECT_EQ(fs.Read(mem + "memory.memsw.limit_in_bytes"), "134217728");

  ASSERT_TRUE((*cg)->Destroy());
  for (const auto& p : {"memory", "cpu,cpuacct", "pids", "freezer"}) {
    EXPECT_FALSE(fs.Exists(std::string("/sys/fs/cgroup/") + p + "/corral/run-1-1")) << p;
  }
  EXPECT_TRUE((*cg)->Destroy()) << "idempotent";
}

TEST(CgroupsV1Test, SwapAccountingOffIsAWarningAndSwapCanBeAllowed) {
  FakeCgroupFs fs = ComountedV1();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto cg = mgr->CreateCgroup("a");
  ASSERT_TRUE(cg);
  const std::string mem = "/sys/fs/cgroup/memory/corral/a/";
  Limits with_swap;
  with_swap.memory_bytes = 1 << 20;
  with_swap.no_swap = false;
  ASSERT_TRUE((*cg)->ApplyLimits(with_swap, false));
  EXPECT_EQ(fs.Read(mem + "memory.memsw.limit_in_bytes"), "-1");
  EXPECT_EQ(fs.Read(mem + "memory.limit_in_bytes"), "1048576");

  fs.Remove(mem + "memory.memsw.limit_in_bytes");
  Limits no_swap;
  no_swap.memory_bytes = 2 << 20;
  auto warnings = (*cg)->ApplyLimits(no_swap, false);
  ASSERT_TRUE(warnings) << warnings.error().message();
  ASSERT_EQ(warnings->size(), 1u);
  EXPECT_NE((*warnings)[0].find("memory.memsw.limit_in_bytes missing"), std::string::npos);
  EXPECT_EQ(fs.Read(mem + "memory.limit_in_bytes"), "2097152");
}

TEST(CgroupsV1Test, MissingControllerIsUnsupportedUnlessAllowed) {
  FakeCgroupFs fs({{"/sys/fs/cgroup/memory", false, {"memory"}},
                   {"/sys/fs/cgroup/freezer", false, {"freezer"}}});
  auto mgr = MustCreate(fs.Options("v1"));
  ASSERT_TRUE(mgr);
  auto cg = mgr->CreateCgroup("a");
  ASSERT_TRUE(cg);
  auto strict = (*cg)->ApplyLimits(SomeLimits(), false);
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(strict.error().message(),
            "cpu limit: controller 'cpu' not available in cgroup v1 hierarchy");

  auto lax = (*cg)->ApplyLimits(SomeLimits(), true);
  ASSERT_TRUE(lax) << lax.error().message();
  ASSERT_EQ(lax->size(), 2u);
  EXPECT_EQ((*lax)[0],
            "cpu limit: controller 'cpu' not available in cgroup v1 hierarchy "
            "(skipped)");
  EXPECT_NE((*lax)[1].find("pids limit: controller 'pids'"), std::string::npos);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/memory/corral/a/memory.limit_in_bytes"), "67108864");

  // A hierarchy without its file (kernel without CFS bandwidth control).
  FakeCgroupFs fs2 = ComountedV1();
  auto mgr2 = MustCreate(fs2.Options("v1"));
  ASSERT_TRUE(mgr2);
  auto cg2 = mgr2->CreateCgroup("b");
  ASSERT_TRUE(cg2);
  fs2.Remove("/sys/fs/cgroup/cpu,cpuacct/corral/b/cpu.cfs_quota_us");
  auto r = (*cg2)->ApplyLimits(SomeLimits(), false);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("cpu limit: file cpu.cfs_quota_us missing"),
            std::string::npos);
}

TEST(CgroupsV1Test, ParsesStats) {
  FakeCgroupFs fs = ComountedV1();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto cg = mgr->CreateCgroup("s");
  ASSERT_TRUE(cg);
  const std::string mem = "/sys/fs/cgroup/memory/corral/s/";
  const std::string acct = "/sys/fs/cgroup/cpu,cpuacct/corral/s/";
  const std::string pids = "/sys/fs/cgroup/pids/corral/s/";
  fs.Write(mem + "memory.usage_in_bytes", "4096\n");
  fs.Write(mem + "memory.max_usage_in_bytes", "33554432\n");
  fs.Write(mem + "memory.failcnt", "17\n");
  fs.Write(mem + "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  fs.Write(acct + "cpuacct.usage_user", "1500000\n");
  fs.Write(acct + "cpuacct.usage_sys", "2500999\n");
  fs.Write(pids + "pids.current", "3\n");
  fs.Write(pids + "pids.events", "max 5\n");
  auto s = (*cg)->ReadStats();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->memory_current_bytes, 4096);
  EXPECT_EQ(s->memory_peak_bytes, 33554432);
  EXPECT_TRUE(s->memory_limit_hit);
  EXPECT_EQ(s->oom_kills, 2);
  EXPECT_EQ(s->cpu_user_usec, 1500);
  EXPECT_EQ(s->cpu_system_usec, 2500);
  EXPECT_EQ(s->pids_current, 3);
  EXPECT_EQ(s->pids_peak, std::nullopt);
  EXPECT_TRUE(s->pids_limit_hit);

  // Older kernels: cpuacct.stat in USER_HZ ticks.
  fs.Remove(acct + "cpuacct.usage_user");
  fs.Write(acct + "cpuacct.stat", "user 7\nsystem 3\n");
  s = (*cg)->ReadStats();
  ASSERT_TRUE(s);
  long hz = sysconf(_SC_CLK_TCK);
  EXPECT_EQ(s->cpu_user_usec, 7 * 1000000 / hz);
  EXPECT_EQ(s->cpu_system_usec, 3 * 1000000 / hz);

  fs.Write(mem + "memory.failcnt", "0\n");
  fs.Write(mem + "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
  fs.Write(pids + "pids.events", "max 0\n");
  s = (*cg)->ReadStats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->oom_kills, 0);
  EXPECT_FALSE(s->memory_limit_hit) << "peak below the (unlimited) limit, no failures";
  EXPECT_FALSE(s->pids_limit_hit);

  // memsw is charged first: its failcnt alone means the limit was hit.
  fs.Write(mem + "memory.memsw.failcnt", "4\n");
  s = (*cg)->ReadStats();
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->memory_limit_hit);
  // Kernels that keep both failcnts at 0: a peak at the limit counts.
  fs.Write(mem + "memory.memsw.failcnt", "0\n");
  fs.Write(mem + "memory.limit_in_bytes", "33554432\n");
  s = (*cg)->ReadStats();
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->memory_limit_hit);
  fs.Write(mem + "memory.max_usage_in_bytes", "33550000\n");
  s = (*cg)->ReadStats();
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->memory_limit_hit);
}

// v1 counts an OOM kill only in the victim's own cgroup (a persistent sandbox's exec leaf):
// the sandbox cgroup's figure must include what its children (and theirs) counted.
TEST(CgroupsV1Test, OomKillsIncludeChildCgroups) {
  FakeCgroupFs fs = ComountedV1();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto sbx = mgr->CreateCgroup("sbx-o");
  ASSERT_TRUE(sbx);
  auto exec = (*sbx)->CreateChild("exec-1");
  ASSERT_TRUE(exec) << exec.error().message();
  auto nested = (*exec)->CreateChild("inner");
  ASSERT_TRUE(nested) << nested.error().message();
  const std::string mem = "/sys/fs/cgroup/memory/corral/sbx-o/";
  fs.Write(mem + "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  fs.Write(mem + "exec-1/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  fs.Write(mem + "exec-1/inner/memory.oom_control",
           "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
  auto s = (*sbx)->ReadStats();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->oom_kills, 7);
  EXPECT_TRUE(s->memory_limit_hit);
  auto leaf = (*nested)->ReadStats();
  ASSERT_TRUE(leaf);
  EXPECT_EQ(leaf->oom_kills, 4) << "a leaf counts only itself";
}

// A pooled jail's cgroup keeps its stat files open (KeepStatFilesOpen): each ReadStats
// must still see what the files hold now, including files that appear later.
TEST(CgroupsV1Test, StatFilesKeptOpenAreReadAfresh) {
  FakeCgroupFs fs = ComountedV1();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto cg = mgr->CreateCgroup("k");
  ASSERT_TRUE(cg);
  const std::string mem = "/sys/fs/cgroup/memory/corral/k/";
  const std::string pids = "/sys/fs/cgroup/pids/corral/k/";
  fs.Write(mem + "memory.max_usage_in_bytes", "4096\n");
  fs.Write(pids + "pids.current", "1\n");
  (*cg)->KeepStatFilesOpen();
  fs.Write(mem + "memory.max_usage_in_bytes", "123456789\n");  // longer than before
  fs.Write(pids + "pids.current", "7\n");
  fs.Write(pids + "pids.peak", "9\n");  // did not exist when the files were opened
  auto s = (*cg)->ReadStats();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->memory_peak_bytes, 123456789);
  EXPECT_EQ(s->pids_current, 7);
  EXPECT_EQ(s->pids_peak, 9);
  fs.Write(mem + "memory.max_usage_in_bytes", "5\n");  // shorter
  fs.Write(pids + "pids.peak", "10\n");
  s = (*cg)->ReadStats();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->memory_peak_bytes, 5);
  EXPECT_EQ(s->pids_peak, 10);
  ASSERT_TRUE((*cg)->Destroy());
}

TEST(CgroupsV1Test, NamesExistingAndInvalid) {
  FakeCgroupFs fs = ComountedV1();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto bad = mgr->CreateCgroup("../escape");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/memory/escape"));

  auto a = mgr->CreateCgroup("dup");
  ASSERT_TRUE(a);
  auto again = mgr->CreateCgroup("dup");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kAlreadyExists);

  // Present in one hierarchy only: refused, and nothing is left in the others.
  ASSERT_EQ(::mkdir(fs.Path("/sys/fs/cgroup/freezer/corral/half").c_str(), 0755), 0);
  auto half = mgr->CreateCgroup("half");
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/memory/corral/half"));
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/pids/corral/half"));

  auto missing = mgr->OpenCgroup("nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  auto opened = mgr->OpenCgroup("dup");
  ASSERT_TRUE(opened);
  EXPECT_EQ((*opened)->paths(), (*a)->paths());
  (*opened)->Release();
  opened->reset();
  EXPECT_TRUE(fs.Exists("/sys/fs/cgroup/memory/corral/dup")) << "released handle kept it";
  a->reset();
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/memory/corral/dup")) << "owning handle removed it";
}

TEST(CgroupsV1Test, ChildrenProcessesAndDestroyChildrenFirst) {
  FakeCgroupFs fs = ComountedV1();
  auto mgr = MustCreate(fs.Options());
  ASSERT_TRUE(mgr);
  auto sbx = mgr->CreateCgroup("sbx-1");
  ASSERT_TRUE(sbx);
  auto child = (*sbx)->CreateChild("exec-1");
  ASSERT_TRUE(child) << child.error().message();
  EXPECT_EQ((*child)->paths()[0], fs.Path("/sys/fs/cgroup/memory/corral/sbx-1/exec-1"));
  ASSERT_FALSE((*sbx)->CreateChild("../x"));

  // Pids far above any pid_max: listed, never signalled by this test.
  fs.Write("/sys/fs/cgroup/memory/corral/sbx-1/exec-1/cgroup.procs", "2000000002\n2000000001\n");
  fs.Write("/sys/fs/cgroup/freezer/corral/sbx-1/cgroup.procs", "2000000001\n");
  auto procs = (*sbx)->Processes();
  ASSERT_TRUE(procs) << procs.error().message();
  EXPECT_EQ(*procs, (std::vector<pid_t>{2000000001, 2000000002}));
  fs.Write("/sys/fs/cgroup/memory/corral/sbx-1/exec-1/cgroup.procs", "");
  fs.Write("/sys/fs/cgroup/freezer/corral/sbx-1/cgroup.procs", "");

  (*child)->Release();
  ASSERT_TRUE((*sbx)->Destroy()) << "removes exec-1 first";
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/memory/corral/sbx-1"));
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/freezer/corral/sbx-1"));
}

TEST(CgroupsV1Test, SetsUseHierarchyWhereTheKernelDefaultsToFlat) {
  FakeCgroupFs fs = ComountedV1();
  fs.Write("/sys/fs/cgroup/memory/memory.use_hierarchy", "0");
  ManagerOptions o = fs.Options();
  auto populate = o.mkdir_hook;
  // Old kernels: a new memory cgroup inherits use_hierarchy=0.
  o.mkdir_hook = [&](const std::string& d) -> Status {
    RETURN_IF_ERROR(populate(d));
    if (d.find("/memory/") != std::string::npos) {
      RETURN_IF_ERROR(corral::WriteFile(JoinPath(d, "memory.use_hierarchy"), "0"));
    }
    return Ok();
  };
  auto mgr = MustCreate(o);
  ASSERT_TRUE(mgr);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/memory/corral/memory.use_hierarchy"), "1");
  auto cg = mgr->CreateCgroup("h");
  ASSERT_TRUE(cg);
  EXPECT_EQ(fs.Read("/sys/fs/cgroup/memory/corral/h/memory.use_hierarchy"), "1");
}

TEST(CgroupsV1Test, ReapOrphansRemovesOnlyDeadRunCgroups) {
  FakeCgroupFs fs = ComountedV1();
  ManagerOptions o = fs.Options();
  o.is_live_corral = [](pid_t pid) { return pid == 200; };
  auto mgr = MustCreate(o);
  ASSERT_TRUE(mgr);
  for (const char* n : {"run-100-1", "run-200-1", "sbx-x"}) {
    auto cg = mgr->CreateCgroup(n);
    ASSERT_TRUE(cg);
    (*cg)->Release();
  }
  // A crash between two mkdirs leaves an orphan in some hierarchies only.
  ASSERT_EQ(::mkdir(fs.Path("/sys/fs/cgroup/pids/corral/run-100-2").c_str(), 0755), 0);
  fs.Write("/sys/fs/cgroup/pids/corral/run-100-2/cgroup.procs", "");

  auto removed = mgr->ReapOrphans();
  ASSERT_TRUE(removed) << removed.error().message();
  EXPECT_EQ(*removed, (std::vector<std::string>{"run-100-1", "run-100-2"}));
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/memory/corral/run-100-1"));
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/freezer/corral/run-100-1"));
  EXPECT_FALSE(fs.Exists("/sys/fs/cgroup/pids/corral/run-100-2"));
  EXPECT_TRUE(fs.Exists("/sys/fs/cgroup/memory/corral/run-200-1"));
  EXPECT_TRUE(fs.Exists("/sys/fs/cgroup/memory/corral/sbx-x"));
}

}  // namespace
}  // namespace corral::cgroups
