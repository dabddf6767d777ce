// Limits and supervision, black-box through `corral run --json` with the static probe, on
// whatever cgroup driver this host gets (v1 on our hybrid development machines; the same
// cases run against cgroup v2 in a VM, see tests/vm/). Root only; leak-checked.
//
// Bounds on time here are loose functional checks ("the deadline fired, not the 60 s
// sleep"), never performance targets; those live in bench/.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/files.h"
#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace corral::test {
namespace {

class LimitsTest : public JailTest {
 protected:
  // The outcome of a probe run that is expected to be stopped by a limit (so not
  // RunProbeOk, which requires exit 0).
  nlohmann::json Outcome(const std::vector<std::string>& flags,
                         const std::vector<std::string>& probe_args, JailRun* run_out = nullptr) {
    Result<JailRun> run = RunProbe(flags, probe_args);
    EXPECT_TRUE(run) << (run ? "" : run.error().message());
    if (!run) return nlohmann::json();
    if (run_out) *run_out = *run;
    return run->outcome;
  }
};

TEST_F(LimitsTest, MemoryHogIsOomKilledAndReported) {
  JailRun run;
  nlohmann::json o = Outcome({"--memory", "64m"}, {"alloc", "512"}, &run);
  EXPECT_EQ(o["status"], "oom_killed") << run.Describe();
  EXPECT_EQ(o["limit"], "memory") << run.Describe();
  EXPECT_EQ(run.run.exit_code, 137) << run.Describe();
  ASSERT_TRUE(o["memory_peak_bytes"].is_number());
  // The peak can exceed the limit by a little (kernel accounting granularity), never by the
  // 512 MiB the hog wanted.
  EXPECT_LE(o["memory_peak_bytes"].get<int64_t>(), 80LL << 20) << run.Describe();
}

TEST_F(LimitsTest, ForkBombStopsAtPidsLimitAndDiesWithTheCommand) {
  JailRun run;
  // Children sleep 60 s: only the jail's teardown can end them before the leak check.
  nlohmann::json o =
      Outcome({"--pids-limit", "32", "--timeout", "30"}, {"forkbomb", "100000", "60"}, &run);
  ASSERT_EQ(o["status"], "exited") << run.Describe();
  ASSERT_TRUE(run.probe.is_object()) << run.Describe();
  EXPECT_LT(run.probe["forked"].get<int64_t>(), 32) << run.Describe();
  EXPECT_EQ(run.probe["errno"], "EAGAIN") << run.Describe();
  EXPECT_EQ(o["limit"], "pids") << run.Describe();
  std::printf("fork bomb: %lld forks, whole run incl. teardown %.1f ms\n",
              static_cast<long long>(run.probe["forked"].get<int64_t>()),
              o["wall_ms"].get<double>());
}

// Without --json the limit is named on stderr, as the memory limit and the timeout are.
TEST_F(LimitsTest, PidsLimitIsNamedOnStderrWithoutJson) {
  Result<RunResult> run =
      RunCorral({"run", "-v", ProbeBinary() + ":/opt/p:ro", "--pids-limit", "32", "--timeout", "30",
                 "--", "/opt/p", "forkbomb", "100000", "60"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 0) << run->Describe();
  EXPECT_NE(run->err.find("corral: process limit reached (pids-limit 32)"), std::string::npos)
      << run->Describe();
}

TEST_F(LimitsTest, InfiniteLoopTimesOutNearTheDeadline) {
  JailRun run;
  nlohmann::json o = Outcome({"--timeout", "1"}, {"spin", "60"}, &run);
  EXPECT_EQ(o["status"], "timed_out") << run.Describe();
  EXPECT_EQ(o["limit"], "wall_time") << run.Describe();
  EXPECT_EQ(run.run.exit_code, 124) << run.Describe();
  double wall = o["wall_ms"].get<double>();
  EXPECT_GE(wall, 1000) << run.Describe();
  EXPECT_LT(wall, 10000) << run.Describe();  // the deadline fired, not the 60 s spin
}

TEST_F(LimitsTest, SigtermIgnoringProcessIsKilledAfterTheGrace) {
  JailRun run;
  nlohmann::json o = Outcome({"--timeout", "1"}, {"ignore-term", "60"}, &run);
  EXPECT_EQ(o["status"], "timed_out") << run.Describe();
  EXPECT_EQ(o["signal"], SIGKILL) << run.Describe();
  double wall = o["wall_ms"].get<double>();
  EXPECT_GE(wall, 1000 + 2000 - 100) << "killed before the 2 s grace\n" << run.Describe();
  EXPECT_LT(wall, 15000) << run.Describe();
}

// The daemon setsid()s and double-forks; the leak check (no descendant may survive) is the
// assertion that matters. A run must also not wait for the daemon to finish.
TEST_F(LimitsTest, DoubleForkedDaemonDoesNotOutliveTheCommand) {
  JailRun run;
  nlohmann::json o = Outcome({}, {"daemon", "60"}, &run);
  EXPECT_EQ(o["status"], "exited") << run.Describe();
  EXPECT_GT(run.probe.value("daemon_pid", -1LL), 0) << run.Describe();
  EXPECT_LT(o["wall_ms"].get<double>(), 10000) << run.Describe();
}

TEST_F(LimitsTest, CpuLimitThrottles) {
  JailRun run;
  nlohmann::json o = Outcome({"--cpus", "0.2"}, {"spin", "2"}, &run);
  ASSERT_EQ(o["status"], "exited") << run.Describe();
  double cpu = o["cpu_user_ms"].get<double>() + o["cpu_system_ms"].get<double>();
  double wall = o["wall_ms"].get<double>();
  std::printf("cpus=0.2: %.0f ms CPU in %.0f ms wall (%.0f%%)\n", cpu, wall, 100 * cpu / wall);
  EXPECT_GT(cpu, 100) << run.Describe();         // it did run
  EXPECT_LT(cpu / wall, 0.5) << run.Describe();  // loose: 0.2 requested
}

TEST_F(LimitsTest, CpuTimeLimitEndsTheCommand) {
  JailRun run;
  nlohmann::json o = Outcome({"--cpu-time", "1"}, {"spin", "30"}, &run);
  EXPECT_EQ(o["status"], "signaled") << run.Describe();
  EXPECT_EQ(o["limit"], "cpu_time") << run.Describe();
  EXPECT_LT(o["wall_ms"].get<double>(), 15000) << run.Describe();
}

TEST_F(LimitsTest, FileSizeLimitIsReported) {
  TempDir dir;
  ASSERT_TRUE(dir.WriteFile("c.yaml", "limits: {file_size: 1m}\n"));
  JailRun run;
  Result<JailRun> r =
      RunJailed(CorralBinary(), {"run", "--json", "--config", dir.Join("c.yaml"), "--", "dd",
                                 "if=/dev/zero", "of=/tmp/big", "bs=1M", "count=8"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome["status"], "signaled") << r->Describe();
  EXPECT_EQ(r->outcome["signal"], SIGXFSZ) << r->Describe();
  EXPECT_EQ(r->outcome["limit"], "file_size") << r->Describe();
}

// Runs corral with stdout to /dev/null and returns its peak RSS in KiB (wait4 rusage).
long CorralPeakRssKib(const std::vector<std::string>& args, int* exit_status) {
  std::vector<std::string> argv_storage = {CorralBinary()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) return -1;
  RecordSpawnedPid(pid);
  posix_spawn_file_actions_destroy(&actions);
  rusage usage{};
  int status = 0;
  if (wait4(pid, &status, 0, &usage) != pid) return -1;
  *exit_status = status;
  return usage.ru_maxrss;
}

TEST_F(LimitsTest, GigabyteOfOutputIsTruncatedAndCorralStaysSmall) {
  JailRun run;
  nlohmann::json o = Outcome({"--output-limit", "1m"}, {"flood", "1000000000"}, &run);
  ASSERT_EQ(o["status"], "exited") << run.Describe();
  EXPECT_EQ(o["stdout_bytes"], 1000000000LL) << run.Describe();
  EXPECT_EQ(o["stdout_dropped_bytes"], 1000000000LL - (1 << 20)) << run.Describe();
  EXPECT_EQ(o["limit"], "output") << run.Describe();

  // The same flood with the default 10 MiB cap, measuring corral's own peak memory.
  int status = 0;
  long rss_kib = CorralPeakRssKib(
      {"run", "--json", "-v", ProbeBinary() + ":/opt/p:ro", "--", "/opt/p", "flood", "1000000000"},
      &status);
  ASSERT_GT(rss_kib, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::printf("corral peak RSS with a 1 GB flood and a 10 MiB cap: %ld KiB\n", rss_kib);
  // Bounded by the cap (plus JSON escaping of what is kept), not by the 1 GB written.
  EXPECT_LT(rss_kib, 200 * 1024);
}

TEST_F(LimitsTest, LimitThatCannotBeAppliedIsRefused) {
  TempDir dir;
  // A driver that cannot enforce memory/cpu/pids here: v2 on a hybrid host has no
  // controllers; v1 on a pure v2 host has no hierarchies. Either must be refused.
  std::filesystem::path unified = "/sys/fs/cgroup/cgroup.controllers";
  std::string driver = std::filesystem::exists(unified) ? "v1" : "v2";
  ASSERT_TRUE(dir.WriteFile("c.yaml", "cgroups: {driver: " + driver + "}\n"));
  Result<RunResult> r = RunCorral({"run", "--config", dir.Join("c.yaml"), "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("unsafe.allow_missing_limits"), std::string::npos) << r->Describe();

  ASSERT_TRUE(dir.WriteFile(
      "ok.yaml", "cgroups: {driver: " + driver + "}\nunsafe: {allow_missing_limits: true}\n"));
  r = RunCorral({"run", "--config", dir.Join("ok.yaml"), "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  // Running without a limit is never silent: either every limit is named as skipped, or
  // the run is announced as having no cgroup limits at all.
  EXPECT_NE(r->err.find("warning"), std::string::npos) << r->Describe();
  EXPECT_TRUE(r->err.find("memory") != std::string::npos ||
              r->err.find("WITHOUT cgroup limits") != std::string::npos)
      << r->Describe();
}

// SIGKILL to corral mid-run: the jail dies with it (parent-death signal on the init), and
// the next corral removes the orphaned cgroup.
TEST_F(LimitsTest, KillNineOfCorralLeavesNothingRunning) {
  std::string probe_mount = ProbeBinary() + ":/opt/p:ro";
  Result<pid_t> started =
      StartProgram({CorralBinary(), "run", "-v", probe_mount, "--", "/opt/p", "sleep", "60"});
  ASSERT_TRUE(started) << started.error().message();
  pid_t pid = *started;
  // Wait until the jail's cgroup has the sleeper in it.
  std::string name = "run-" + std::to_string(pid) + "-1";
  std::vector<std::string> candidates = {"/sys/fs/cgroup/pids/corral/runs/" + name,
                                         "/sys/fs/cgroup/corral/runs/" + name};
  auto populated = [&] {
    for (const auto& dir : candidates) {
      auto procs = ReadFile(dir + "/cgroup.procs");
      if (procs && procs->find('\n') != std::string::npos &&
          procs->find('\n') != procs->size() - 1) {
        return true;  // init and command
      }
    }
    return false;
  };
  for (int i = 0; i < 200 && !populated(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(populated()) << "jail never started";
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  // Next start of corral reaps the orphaned cgroup.
  Result<RunResult> r = RunCorral({"run", "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  for (const auto& dir : candidates) {
    EXPECT_FALSE(std::filesystem::exists(dir)) << dir << " not reaped";
  }
  // The leak checker (fixture) asserts that no process of the jail survived.
}

}  // namespace
}  // namespace corral::test
