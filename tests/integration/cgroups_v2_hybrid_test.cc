// cgroups: the v2 driver on a real kernel whose v2 hierarchy has no controllers (a hybrid
// host like our development machines). Nothing can be limited there, but creation,
// clone3(CLONE_INTO_CGROUP), cgroup.kill, Destroy and the "controller not available"
// refusal are real. Full v2 enforcement runs in the VM (tests/vm).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "cgroups/cgroup.h"
#include "cgroups/internal.h"
#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"

namespace corral::cgroups {
namespace {

class CgroupsV2HybridTest : public test::LeakCheckedTest {
 protected:
  void SetUp() override {
    CORRAL_REQUIRE_ROOT();
    auto info = Detect(ManagerOptions{});
    ASSERT_TRUE(info) << info.error().message();
    if (!info->v2_mounted) CORRAL_SKIP_OR_FAIL("cgroup v2 is not mounted");
    if (info->driver == Driver::kV2) {
      GTEST_SKIP() << "v2 has memory, cpu and pids here: the full tests cover it";
    }
    mount_ = info->v2_mount;
    options_.driver = "v2";
    options_.parent = "corral-test-" + std::to_string(getpid()) + "-v2";
    auto mgr = CgroupManager::Create(options_);
    ASSERT_TRUE(mgr) << mgr.error().message();
    mgr_ = std::move(*mgr);
  }
  void TearDown() override {
    mgr_.reset();
    if (mount_.empty()) return;
    std::string parent = internal::JoinPath(mount_, options_.parent);
    auto removed = internal::RemoveTree(parent, {});
    EXPECT_TRUE(removed) << removed.error().message();
  }

  std::string mount_;
  ManagerOptions options_;
  std::unique_ptr<CgroupManager> mgr_;
};

TEST_F(CgroupsV2HybridTest, RefusesLimitsWithoutControllersAndStillKills) {
  auto cg = mgr_->CreateCgroup(CgroupManager::OneShotName());
  ASSERT_TRUE(cg) << cg.error().message();
  Limits limits;
  limits.memory_bytes = 64 << 20;
  limits.cpus = 0.5;
  limits.pids = 10;
  auto strict = (*cg)->ApplyLimits(limits, false);
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(
      strict.error().message(),
      "memory limit: controller 'memory' not available in cgroup v2 cgroup " + (*cg)->paths()[0]);
  auto lax = (*cg)->ApplyLimits(limits, true);
  ASSERT_TRUE(lax) << lax.error().message();
  EXPECT_EQ(lax->size(), 3u);

  // clone3 straight into the cgroup; the child double-forks a setsid'ed grandchild.
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  struct clone_args args;
  std::memset(&args, 0, sizeof args);
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>((*cg)->clone_into_fd());
  pid_t pid = static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    signal(SIGTERM, SIG_IGN);
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        pid_t self = getpid();
        if (write(fds[1], &self, sizeof self) != sizeof self) _exit(1);
        for (;;) pause();
      }
      _exit(0);
    }
    for (;;) pause();
  }
  close(fds[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(read(fds[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  close(fds[0]);
  auto procs = (*cg)->Processes();
  ASSERT_TRUE(procs);
  EXPECT_NE(std::find(procs->begin(), procs->end(), pid), procs->end());
  EXPECT_NE(std::find(procs->begin(), procs->end(), grandchild), procs->end());

  ASSERT_TRUE((*cg)->KillAll());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  auto left = (*cg)->Processes();
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());
  std::vector<std::string> paths = (*cg)->paths();
  ASSERT_TRUE((*cg)->Destroy());
  for (const auto& p : paths) EXPECT_FALSE(internal::PathExists(p)) << p;
}

}  // namespace
}  // namespace corral::cgroups
