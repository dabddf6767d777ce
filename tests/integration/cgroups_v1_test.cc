// cgroups on a real kernel (root): limits are enforced, KillAll leaves nothing, Destroy and
// ReapOrphans clean up. Built twice from this file:
//   - in corral_integration_tests against the v1 driver (this hybrid host);
//   - as the static tests/vm binary corral_cgroups_vmtests with
//     CORRAL_CGROUPS_TEST_DRIVER="v2", run inside a VM whose root cgroup has every
//     controller (see tests/vm/README.md).
// Each test works below its own parent "corral-test-<pid>-<n>" and removes it. Figures
// (time to kill, OOM detection, cpu usage) are printed as "[measure] ..." lines.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <set>
#include <thread>

#include "base/unique_fd.h"
#include "cgroups/cgroup.h"
#include "cgroups/internal.h"
#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"

#ifndef CORRAL_CGROUPS_TEST_DRIVER
#define CORRAL_CGROUPS_TEST_DRIVER "v1"
#endif

namespace corral::cgroups {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kDriver = CORRAL_CGROUPS_TEST_DRIVER;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void Measure(const std::string& what, const std::string& value) {
  std::cout << "[measure] driver " << kDriver << ": " << what << ": " << value << std::endl;
}

// Reads one int the child wrote, within `timeout_ms`; nullopt on EOF or timeout.
std::optional<int> ReadInt(int fd, int timeout_ms = 5000) {
  struct pollfd p = {fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
  int v = 0;
  if (::read(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
  return v;
}

void WriteInt(int fd, int v) {
  if (::write(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) _exit(120);
}

// waitpid with a deadline; nullopt if `pid` did not end in time.
std::optional<int> WaitFor(pid_t pid, int timeout_ms = 5000) {
  auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < end) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return std::nullopt;
    ::usleep(2000);
  }
  return std::nullopt;
}

bool KilledBy(std::optional<int> status, int sig) {
  return status && WIFSIGNALED(*status) && WTERMSIG(*status) == sig;
}

// LeakCheckedTest also checks, after TearDown, that no cgroup, process or temp entry of
// ours is left on the host.
class CgroupsRealTest : public test::LeakCheckedTest {
 protected:
  void SetUp() override {
    CORRAL_REQUIRE_ROOT();
    ManagerOptions probe;
    probe.driver = kDriver;
    auto info = Detect(probe);
    ASSERT_TRUE(info) << info.error().message();
    // The tests check enforcement, so the auto rule must accept this driver here.
    auto picked = SelectDriver(*info, "auto");
    if (!info->driver || !picked || DriverName(*picked) != std::string(kDriver)) {
      CORRAL_SKIP_OR_FAIL(
          std::string("cgroup ") + kDriver +
          " with memory, cpu and pids is "
          "not available here: " +
          (picked ? std::string("auto picks ") + DriverName(*picked) : picked.error().message()));
    }
    info_ = *info;
    static int counter = 0;
    options_.driver = kDriver;
    options_.parent = "corral-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
    auto mgr = CgroupManager::Create(options_);
    ASSERT_TRUE(mgr) << mgr.error().message();
    mgr_ = std::move(*mgr);
    // Orphans of double forks come back to us, so the tests can reap and check them.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  }

  void TearDown() override {
    mgr_.reset();
    // Whatever a failed test left: kill by pid (only our descendants) and reap.
    for (pid_t p : spawned_) ::kill(p, SIGKILL);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (options_.parent.empty()) return;
    // The parent itself is ours to remove; anything below it is a leak.
    for (const auto& dir : ParentDirs()) {
      auto left = internal::ListSubdirs(dir);
      if (left && !left->empty()) ADD_FAILURE() << dir << " still holds " << (*left)[0];
      auto removed = internal::RemoveTree(dir, {});
      EXPECT_TRUE(removed) << removed.error().message();
      EXPECT_FALSE(internal::PathExists(dir));
    }
  }

  std::vector<std::string> ParentDirs() const {
    std::vector<std::string> out;
    if (std::string(kDriver) == "v2") {
      out.push_back(internal::JoinPath(info_.v2_mount, options_.parent));
    } else {
      std::set<std::string> mounts;
      for (const auto& [c, m] : info_.v1_mounts) {
        for (const char* want : {"memory", "cpu", "cpuacct", "pids", "freezer"}) {
          if (c == want) mounts.insert(m);
        }
      }
      for (const auto& m : mounts) out.push_back(internal::JoinPath(m, options_.parent));
    }
    return out;
  }

  std::unique_ptr<Cgroup> MakeCgroup(const Limits& limits) {
    auto cg = mgr_->CreateCgroup(CgroupManager::OneShotName());
    EXPECT_TRUE(cg) << cg.error().message();
    if (!cg) return nullptr;
    auto warnings = (*cg)->ApplyLimits(limits, false);
    EXPECT_TRUE(warnings) << warnings.error().message();
    return std::move(*cg);
  }

  // Starts `body` in a child that is inside `cg` before it runs: through clone3
  // CLONE_INTO_CGROUP when the kernel has it (v2) and `use_clone3`, else by writing "0"
  // into every attach fd as its first step. body gets a pipe to report ints on; its
  // return value is the exit code. Returns the pid and the read end.
  std::pair<pid_t, UniqueFd> Spawn(Cgroup& cg, const std::function<int(int)>& body,
                                   bool use_clone3 = true) {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    pid_t pid;
    if (use_clone3 && info_.clone_into_cgroup) {
      struct clone_args args;
      std::memset(&args, 0, sizeof args);
      args.flags = CLONE_INTO_CGROUP;
      args.exit_signal = SIGCHLD;
      args.cgroup = static_cast<uint64_t>(cg.clone_into_fd());
      pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
    } else {
      pid = ::fork();
      if (pid == 0) {
        for (int fd : cg.attach_fds()) {
          if (::write(fd, "0", 1) != 1) _exit(121);
        }
      }
    }
    if (pid == 0) {
      ::close(p[0]);
      WriteInt(p[1], 0);  // "inside"
      _exit(body(p[1]));
    }
    EXPECT_GT(pid, 0) << std::strerror(errno);
    ::close(p[1]);
    spawned_.push_back(pid);
    UniqueFd rd(p[0]);
    EXPECT_EQ(ReadInt(rd.get()), 0) << "child did not start in the cgroup";
    return {pid, std::move(rd)};
  }

  HierarchyInfo info_;
  ManagerOptions options_;
  std::unique_ptr<CgroupManager> mgr_;
  std::vector<pid_t> spawned_;
};

[[noreturn]] void PauseForever() {
  for (;;) ::pause();
}

TEST_F(CgroupsRealTest, MemoryHogIsOomKilled) {
  Limits limits;
  limits.memory_bytes = 32 << 20;
  limits.pids = 64;
  auto cg = MakeCgroup(limits);
  ASSERT_TRUE(cg);
  auto start = Clock::now();
  auto [pid, rd] = Spawn(*cg, [](int) {
    for (int i = 0; i < 512; ++i) {  // 512 MiB, touched
      void* m = std::malloc(1 << 20);
      if (m == nullptr) return 3;
      std::memset(m, 0x5a, 1 << 20);
    }
    return 0;
  });
  auto status = WaitFor(pid, 20000);
  double ms = MsSince(start);
  ASSERT_TRUE(KilledBy(status, SIGKILL))
      << "memory hog was not OOM-killed; status " << (status ? *status : -1);
  auto stats = cg->ReadStats();
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_GE(stats->oom_kills, 1);
  EXPECT_TRUE(stats->memory_limit_hit);
  if (stats->memory_peak_bytes) {
    EXPECT_LE(*stats->memory_peak_bytes, 34 << 20) << "peak above the limit";
    EXPECT_GE(*stats->memory_peak_bytes, 16 << 20) << "peak implausibly low";
  }
  Measure("OOM kill of a 512 MiB hog under 32 MiB (spawn to reaped)",
          std::to_string(static_cast<int>(ms)) +
              " ms, oom_kills=" + std::to_string(stats->oom_kills) + ", peak=" +
              (stats->memory_peak_bytes ? std::to_string(*stats->memory_peak_bytes) : "n/a"));
  ASSERT_TRUE(cg->Destroy());
}

TEST_F(CgroupsRealTest, ForkBombStopsAtPidsMaxAndKillAllLeavesNothing) {
  Limits limits;
  limits.pids = 32;
  limits.cpus = 1.0;
  limits.memory_bytes = 256 << 20;
  auto cg = MakeCgroup(limits);
  ASSERT_TRUE(cg);
  auto [pid, rd] = Spawn(*cg, [](int report) -> int {
    int failures = 0;
    for (;;) {
      pid_t p = ::fork();
      if (p < 0) {
        // Only the first process reports, once, with the errno of a failed fork.
        if (++failures == 1 && report >= 0) {
          WriteInt(report, errno);
          ::close(report);
        }
        ::usleep(1000);
      } else if (p == 0) {
        if (report >= 0) ::close(report);
        report = -1;
        failures = 1;
      }
    }
  });
  auto err = ReadInt(rd.get(), 10000);
  ASSERT_TRUE(err.has_value()) << "fork never failed";
  EXPECT_EQ(*err, EAGAIN) << std::strerror(*err);
  auto stats = cg->ReadStats();
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_TRUE(stats->pids_limit_hit);
  ASSERT_TRUE(stats->pids_current.has_value());
  EXPECT_LE(*stats->pids_current, 32);
  EXPECT_GE(*stats->pids_current, 30) << "the bomb should fill pids.max";
  auto before = cg->Processes();
  ASSERT_TRUE(before);

  auto start = Clock::now();
  ASSERT_TRUE(cg->KillAll());
  double ms = MsSince(start);
  Measure("KillAll of a fork bomb at pids.max=32",
          std::to_string(ms) + " ms (" + std::to_string(before->size()) + " processes)");
  auto after = cg->Processes();
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
  EXPECT_TRUE(KilledBy(WaitFor(pid), SIGKILL));
  // Every bomb process was ours (subreaper); each must be gone, not just hidden.
  for (pid_t p : *before) {
    if (p == pid) continue;
    auto st = WaitFor(p, 2000);
    EXPECT_TRUE(KilledBy(st, SIGKILL) || (!st && ::kill(p, 0) != 0)) << "pid " << p;
  }
  ASSERT_TRUE(cg->Destroy());
}

TEST_F(CgroupsRealTest, KillAllKillsSetsidGrandchildAndSigtermIgnorer) {
  auto cg = MakeCgroup(Limits{});
  ASSERT_TRUE(cg);
  auto [leader, rd] = Spawn(*cg, [](int report) -> int {
    ::signal(SIGTERM, SIG_IGN);
    pid_t mid = ::fork();
    if (mid == 0) {
      ::setsid();
      pid_t g = ::fork();
      if (g == 0) {
        WriteInt(report, getpid());
        PauseForever();
      }
      _exit(0);
    }
    ::waitpid(mid, nullptr, 0);
    PauseForever();
  });
  auto grandchild = ReadInt(rd.get());
  ASSERT_TRUE(grandchild.has_value());
  // The middle process exits right after the double fork.
  std::vector<pid_t> want = {std::min(leader, *grandchild), std::max(leader, *grandchild)};
  auto procs = cg->Processes();
  for (int i = 0; i < 500 && procs && *procs != want; ++i) {
    ::usleep(10000);
    procs = cg->Processes();
  }
  ASSERT_TRUE(procs);
  EXPECT_EQ(*procs, want);

  ASSERT_TRUE(cg->SignalAll(SIGTERM));
  ::usleep(200 * 1000);
  EXPECT_EQ(::waitpid(leader, nullptr, WNOHANG), 0) << "SIGTERM is ignored";
  ASSERT_TRUE(cg->KillAll());
  EXPECT_TRUE(KilledBy(WaitFor(leader), SIGKILL));
  EXPECT_TRUE(KilledBy(WaitFor(*grandchild), SIGKILL))
      << "the setsid'ed double-forked grandchild must die too";
  auto left = cg->Processes();
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());
  ASSERT_TRUE(cg->Destroy());
}

TEST_F(CgroupsRealTest, CpuLimitThrottlesABusyLoop) {
  Limits limits;
  limits.cpus = 0.2;
  auto cg = MakeCgroup(limits);
  ASSERT_TRUE(cg);
  auto [pid, rd] = Spawn(*cg, [](int) {
    auto end = Clock::now() + std::chrono::seconds(1);
    volatile uint64_t x = 0;
    while (Clock::now() < end) x = x + 1;
    return 0;
  });
  auto status = WaitFor(pid, 10000);
  ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  auto stats = cg->ReadStats();
  ASSERT_TRUE(stats) << stats.error().message();
  ASSERT_TRUE(stats->cpu_user_usec && stats->cpu_system_usec);
  int64_t used = *stats->cpu_user_usec + *stats->cpu_system_usec;
  Measure("cpu used by a 1 s busy loop under cpus=0.2", std::to_string(used / 1000) + " ms");
  EXPECT_LT(used, 500000) << "cpu.max / cfs_quota_us did not throttle";
  EXPECT_GT(used, 20000) << "cpu accounting reads implausibly low";
  ASSERT_TRUE(cg->Destroy());
}

TEST_F(CgroupsRealTest, AttachFdsAndAddProcessMoveProcessesIn) {
  auto cg = MakeCgroup(Limits{});
  ASSERT_TRUE(cg);
  auto [attached, rd] = Spawn(
      *cg, [](int) -> int { PauseForever(); }, /*use_clone3=*/false);
  pid_t outside = ::fork();
  if (outside == 0) PauseForever();
  spawned_.push_back(outside);
  ASSERT_TRUE(cg->AddProcess(outside));
  auto procs = cg->Processes();
  ASSERT_TRUE(procs);
  EXPECT_EQ(*procs, (std::vector<pid_t>{std::min(attached, outside), std::max(attached, outside)}));
  ASSERT_TRUE(cg->KillAll());
  EXPECT_TRUE(KilledBy(WaitFor(attached), SIGKILL));
  EXPECT_TRUE(KilledBy(WaitFor(outside), SIGKILL));
  ASSERT_TRUE(cg->Destroy());
}

TEST_F(CgroupsRealTest, DestroyKillsAndLeavesNoDirectory) {
  auto cg = MakeCgroup(Limits{});
  ASSERT_TRUE(cg);
  auto child = cg->CreateChild("exec-1");
  ASSERT_TRUE(child) << child.error().message();
  auto [pid, rd] = Spawn(**child, [](int) -> int { PauseForever(); });
  std::vector<std::string> paths = cg->paths();
  (*child)->Release();  // the parent's Destroy must handle the child on its own
  ASSERT_TRUE(cg->Destroy());
  EXPECT_TRUE(KilledBy(WaitFor(pid), SIGKILL));
  for (const auto& p : paths) EXPECT_FALSE(internal::PathExists(p)) << p;
  EXPECT_TRUE(cg->Destroy()) << "idempotent";
}

// A sandbox's tree is walked (Processes, KillAll, Destroy) while its exec cgroups come and
// go in other threads: a child removed between the walk's open of its cgroup.procs and the
// read (ENODEV) is a child gone, not an error. (The daemon's DELETE failed this way when the
// sandbox's shell sessions tore their exec cgroups down at the same moment.)
TEST_F(CgroupsRealTest, WalkingATreeWhoseChildrenComeAndGoNeverFails) {
  auto cg = MakeCgroup(Limits{});
  ASSERT_TRUE(cg);
  std::atomic<bool> stop{false};
  std::atomic<int> churned{0};
  std::string churn_error;
  std::thread churn([&] {
    for (int i = 0; !stop; ++i) {
      auto child = cg->CreateChild("exec-churn-" + std::to_string(i));
      if (!child) {
        churn_error = child.error().message();
        return;
      }
      Status gone = (*child)->Destroy();
      if (!gone) {
        churn_error = gone.error().message();
        return;
      }
      ++churned;
    }
  });
  int walks = 0;
  std::string walk_error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline && walk_error.empty()) {
    auto procs = cg->Processes();
    if (!procs) walk_error = procs.error().message();
    ++walks;
  }
  stop = true;
  churn.join();
  EXPECT_EQ(walk_error, "") << "after " << walks << " walks";
  EXPECT_EQ(churn_error, "");
  EXPECT_GT(churned.load(), 10) << "the children did come and go";
  ASSERT_TRUE(cg->Destroy());
}

TEST_F(CgroupsRealTest, ReapOrphansRemovesDeadRunCgroupsOnly) {
  pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ASSERT_TRUE(WaitFor(dead).has_value());
  std::string orphan = "run-" + std::to_string(dead) + "-1";
  auto planted = mgr_->CreateCgroup(orphan);
  ASSERT_TRUE(planted) << planted.error().message();
  auto [inside, rd] = Spawn(**planted, [](int) -> int { PauseForever(); });
  (*planted)->Release();
  auto keep = mgr_->CreateCgroup("sbx-x");
  ASSERT_TRUE(keep);
  (*keep)->Release();
  auto mine = mgr_->CreateCgroup(CgroupManager::OneShotName());  // our pid is alive
  ASSERT_TRUE(mine);

  auto removed = mgr_->ReapOrphans();
  ASSERT_TRUE(removed) << removed.error().message();
  EXPECT_EQ(*removed, std::vector<std::string>{orphan});
  EXPECT_TRUE(KilledBy(WaitFor(inside), SIGKILL)) << "the orphan's process is killed";
  for (const auto& p : (*planted)->paths()) EXPECT_FALSE(internal::PathExists(p)) << p;
  for (const auto& p : (*keep)->paths()) EXPECT_TRUE(internal::PathExists(p)) << p;
  for (const auto& p : (*mine)->paths()) EXPECT_TRUE(internal::PathExists(p)) << p;

  auto reopened = mgr_->OpenCgroup("sbx-x");
  ASSERT_TRUE(reopened);
  ASSERT_TRUE((*reopened)->Destroy());
  ASSERT_TRUE((*mine)->Destroy());
}

}  // namespace
}  // namespace corral::cgroups
