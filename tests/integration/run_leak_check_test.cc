// Self-tests of the test support that the `corral run` tests rely on: if the leak checker
// or the runner were broken, every other integration test would pass vacuously. No root
// needed; nothing here runs corral.
#include <fcntl.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"
#include "tests/support/run_corral.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

bool HasLeak(const std::vector<Leak>& leaks, Leak::Kind kind, const std::string& needle) {
  return std::any_of(leaks.begin(), leaks.end(), [&](const Leak& l) {
    return l.kind == kind && l.attributed && l.what.find(needle) != std::string::npos;
  });
}

pid_t ForkSleeper() {
  pid_t pid = fork();
  if (pid == 0) {
    sleep(30);
    _exit(0);
  }
  return pid;
}

TEST(LeakCheckSelfTest, NoLeakWhenNothingHappens) {
  HostSnapshot before = TakeHostSnapshot();
  std::vector<Leak> leaks = WaitForNoLeaks(before, std::chrono::milliseconds(0));
  for (const Leak& l : leaks) EXPECT_FALSE(l.attributed) << l.Describe();
}

TEST(LeakCheckSelfTest, DetectsAndKillsLeakedChild) {
  HostSnapshot before = TakeHostSnapshot();
  pid_t pid = ForkSleeper();
  ASSERT_GT(pid, 0);
  std::vector<Leak> leaks = WaitForNoLeaks(before, std::chrono::milliseconds(100));
  EXPECT_TRUE(HasLeak(leaks, Leak::Kind::kProcess, std::to_string(pid) + " ("));
  EXPECT_TRUE(CleanUpLeaks(leaks).empty());
  EXPECT_NE(kill(pid, 0), 0) << "leaked child still alive after cleanup";
  EXPECT_TRUE(WaitForNoLeaks(before, std::chrono::milliseconds(0)).empty());
}

// The case `daemon` in the probe exercises: double fork, the middle process exits. As a
// subreaper we adopt the grandchild instead of init, so it is still seen as ours.
TEST(LeakCheckSelfTest, DetectsDaemonizedGrandchild) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  HostSnapshot before = TakeHostSnapshot();
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  pid_t middle = fork();
  if (middle == 0) {
    setsid();
    pid_t grandchild = ForkSleeper();
    ssize_t ignored = write(fds[1], &grandchild, sizeof(grandchild));
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  pid_t grandchild = -1;
  ASSERT_EQ(read(fds[0], &grandchild, sizeof(grandchild)), static_cast<ssize_t>(sizeof(pid_t)));
  close(fds[0]);
  waitpid(middle, nullptr, 0);
  std::vector<Leak> leaks = WaitForNoLeaks(before, std::chrono::milliseconds(100));
  EXPECT_TRUE(HasLeak(leaks, Leak::Kind::kProcess, std::to_string(grandchild) + " ("));
  EXPECT_TRUE(CleanUpLeaks(leaks).empty());
  EXPECT_NE(kill(grandchild, 0), 0);
}

TEST(LeakCheckSelfTest, DetectsLeakedTempDirAndRemovesIt) {
  HostSnapshot before = TakeHostSnapshot();
  std::string path = "/tmp/corral-test-" + std::to_string(getpid()) + "-selftest-leak";
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((path + "/sub").c_str(), 0700), 0);
  std::vector<Leak> leaks = WaitForNoLeaks(before, std::chrono::milliseconds(0));
  EXPECT_TRUE(HasLeak(leaks, Leak::Kind::kTempEntry, path));
  EXPECT_TRUE(CleanUpLeaks(leaks).empty());
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(LeakCheckSelfTest, DetectsLeakedCgroupAndMount) {
  if (!IsRoot()) CORRAL_SKIP_OR_FAIL("needs root to make cgroups and mounts");
  std::string cgroup = "/sys/fs/cgroup/pids/corral-selftest-" + std::to_string(getpid());
  std::string mount_point = "/tmp/corral-test-" + std::to_string(getpid()) + "-selftest-mnt";
  if (access("/sys/fs/cgroup/pids", F_OK) != 0) {
    cgroup = "/sys/fs/cgroup/corral-selftest-" + std::to_string(getpid());  // cgroup v2 only
  }
  HostSnapshot before = TakeHostSnapshot();
  ASSERT_EQ(mkdir(cgroup.c_str(), 0755), 0) << cgroup << ": " << strerror(errno);
  ASSERT_EQ(mkdir(mount_point.c_str(), 0700), 0);
  ASSERT_EQ(mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=1m"), 0) << strerror(errno);
  std::vector<Leak> leaks = WaitForNoLeaks(before, std::chrono::milliseconds(0));
  EXPECT_TRUE(HasLeak(leaks, Leak::Kind::kCgroup, cgroup));
  EXPECT_TRUE(HasLeak(leaks, Leak::Kind::kMount, mount_point + " tmpfs"));
  EXPECT_TRUE(HasLeak(leaks, Leak::Kind::kTempEntry, mount_point));
  std::vector<std::string> failed = CleanUpLeaks(leaks);
  EXPECT_TRUE(failed.empty()) << failed.front();
  EXPECT_NE(access(cgroup.c_str(), F_OK), 0);
  EXPECT_NE(access(mount_point.c_str(), F_OK), 0);
  EXPECT_TRUE(WaitForNoLeaks(before, std::chrono::milliseconds(0)).empty());
}

TEST(LeakCheckSelfTest, FixtureFailsALeakyTestAndNamesTheLeak) {
  struct Leaky : LeakCheckedTest {
    void TestBody() override {}
  };
  static pid_t leaked;
  EXPECT_NONFATAL_FAILURE(
      {
        auto* test = new Leaky;
        leaked = ForkSleeper();
        delete test;
      },
      "test leaked");
  EXPECT_NE(kill(leaked, 0), 0) << "the fixture did not clean up the leaked process";
}

TEST(TempDirSelfTest, RemovesTreeButNotThroughSymlinks) {
  TempDir outside;
  ASSERT_TRUE(outside.WriteFile("keep", "x"));
  std::string path;
  {
    TempDir dir;
    path = dir.path();
    ASSERT_TRUE(dir.MakeDirs("a/b/c"));
    ASSERT_TRUE(dir.WriteFile("a/b/c/file", "hello"));
    ASSERT_EQ(symlink(outside.path().c_str(), dir.Join("a/link").c_str()), 0);
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " survived its TempDir";
  EXPECT_EQ(access(outside.Join("keep").c_str(), F_OK), 0) << "removal followed a symlink";
}

TEST(RunProgramSelfTest, CapturesOutputAndExitCode) {
  Result<RunResult> r = RunProgram("/bin/sh", {"-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->exited);
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST(RunProgramSelfTest, ReportsSignalAndStdin) {
  RunOptions options;
  options.stdin_data = "fed through stdin";
  Result<RunResult> r = RunProgram("/bin/sh", {"-c", "cat; kill -9 $$"}, options);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->exited);
  EXPECT_EQ(r->term_signal, SIGKILL);
  EXPECT_EQ(r->out, "fed through stdin");
}

TEST(RunProgramSelfTest, KillsAtTimeout) {
  RunOptions options;
  options.timeout = std::chrono::milliseconds(300);
  Result<RunResult> r = RunProgram("/bin/sleep", {"30"}, options);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->term_signal, SIGKILL);
  EXPECT_LT(r->wall_ms, 10000);
}

TEST(RunProgramSelfTest, PtyAndStrayFd) {
  RunOptions options;
  options.use_pty = true;
  options.stray_fd = 57;
  Result<RunResult> r =
      RunProgram("/bin/sh",
                 {"-c",
                  "test -t 0 && test -t 1 && echo tty; ls /proc/self/fd/57 >/dev/null && "
                  "readlink /proc/self/fd/57"},
                 options);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_NE(r->out.find("tty"), std::string::npos) << r->Describe();
  EXPECT_NE(r->out.find("/\r\n"), std::string::npos) << "fd 57 should be the host's /\n"
                                                     << r->Describe();
}

}  // namespace
}  // namespace corral::test
