// Rootless mode beyond the isolation probe (which run_isolation_test.cc runs as root and
// as the unprivileged test user): how the jail's ids map to the host, what an unprivileged
// user gets for limits, and `--rootless` as root. Black-box through the corral binary;
// root only (the test drops to the test user itself); leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "base/files.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_user.h"

namespace corral::test {
namespace {

using nlohmann::json;

// "      1000       4321          1\n" -> {{1000, 4321, 1}}
std::vector<std::vector<long>> ParseIdMap(const std::string& text) {
  std::vector<std::vector<long>> lines;
  std::istringstream in(text);
  long inside, outside, count;
  while (in >> inside >> outside >> count) lines.push_back({inside, outside, count});
  return lines;
}

class RootlessTest : public JailTest {};

TEST_F(RootlessTest, UnprivilegedJailRunsAsTheCallerOnTheHost) {
  ASSERT_NO_FATAL_FAILURE(UseTestUser());
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"read", "/proc/self/uid_map"}, &run));
  EXPECT_EQ(ParseIdMap(run.probe["content"]),
            (std::vector<std::vector<long>>{{1000, static_cast<long>(test_user().uid), 1}}))
      << run.Describe();
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"read", "/proc/self/gid_map"}, &run));
  EXPECT_EQ(ParseIdMap(run.probe["content"]),
            (std::vector<std::vector<long>>{{1000, static_cast<long>(test_user().gid), 1}}));
  // Mapping one's own gid without privilege requires setgroups off in the namespace.
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"read", "/proc/self/setgroups"}, &run));
  EXPECT_EQ(run.probe["content"], "deny\n");

  // What the command writes in its workspace belongs to the caller on the host.
  TempDir user_data;
  ASSERT_NO_FATAL_FAILURE(GiveToTestUser(user_data));
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({"--user-data", user_data.path()},
                                     {"write", "/mnt/user-data/workspace/f", "x"}, &run));
  ASSERT_EQ(run.probe["ok"], true) << run.Describe();
  struct stat st;
  ASSERT_EQ(stat(user_data.Join("workspace/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, test_user().uid);
  EXPECT_EQ(st.st_gid, test_user().gid);
}

// The v1-hybrid development hosts cannot give an unprivileged user cgroups: corral refuses
// the configured limits and says why and how to fix it, instead of running unlimited.
TEST_F(RootlessTest, UnprivilegedUserWithoutDelegatedCgroupIsRefusedLimits) {
  if (MemoryOnCgroupV2()) {
    CORRAL_SKIP_OR_FAIL("cgroup v2 host: the delegated-subtree test (tests/vm) applies here");
  }
  ASSERT_NO_FATAL_FAILURE(UseTestUser());
  // No --config: the default limits, no unsafe opt-in.
  TempDir runtime;
  ASSERT_NO_FATAL_FAILURE(GiveToTestUser(runtime));
  RunOptions options;
  options.env.push_back("XDG_RUNTIME_DIR=" + runtime.path());
  Result<RunResult> run = RunProgram(
      kSetprivBinary, AsTestUser(test_user(), CorralBinary(), {"run", "--json", "--", "/bin/true"}),
      options);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 125) << run->Describe();
  json outcome = json::parse(run->out, nullptr, false);
  ASSERT_TRUE(outcome.is_object()) << run->Describe();
  EXPECT_EQ(outcome["status"], "setup_failed");
  std::string message = outcome["setup_error"]["message"];
  for (const char* part :
       {"cannot enforce limits.memory (512 MiB), limits.cpus (1) and limits.pids (256) without "
        "root: the memory controller is not on cgroup v2 here",
        "systemd-run --user --scope -p Delegate=yes corral", "systemd.unified_cgroup_hierarchy=1",
        "unsafe.allow_missing_limits: true"}) {
    EXPECT_NE(message.find(part), std::string::npos) << "missing \"" << part << "\" in\n"
                                                     << message;
  }
}

TEST_F(RootlessTest, AllowMissingLimitsRunsWithRlimitsOnlyAndNamesTheSkippedLimits) {
  if (MemoryOnCgroupV2()) {
    CORRAL_SKIP_OR_FAIL("cgroup v2 host: the delegated-subtree test (tests/vm) applies here");
  }
  ASSERT_NO_FATAL_FAILURE(UseTestUser());  // its config has unsafe.allow_missing_limits
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({"--memory", "64m", "--pids-limit", "32"}, {"report"}, &run));
  std::string warnings = run.outcome["warnings"].dump();
  EXPECT_NE(warnings.find("rootless: limits.memory (64 MiB) and limits.cpus (1) are NOT "
                          "enforced (unsafe.allow_missing_limits: "),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("limits.pids (32) holds as RLIMIT_NPROC"), std::string::npos) << warnings;
  EXPECT_EQ(run.probe["rlimits"]["nproc"], json::array({32, 32})) << run.probe["rlimits"].dump();

  // And it holds: past 16 processes of the jail's uid a fork is refused (EAGAIN).
  auto forks = RunCorralAsCaller(
      {"run", "--pids-limit", "16", "--", "python3", "-c",
       "import os, time\nn = 0\ntry:\n    for i in range(40):\n        if os.fork() == 0:\n"
       "            time.sleep(5)\n            os._exit(0)\n        n += 1\n"
       "except OSError as e:\n    print(n, e.errno)\n"});
  ASSERT_TRUE(forks) << forks.error().message();
  const int started = std::atoi(forks->out.c_str());
  EXPECT_GT(started, 0) << forks->Describe();
  EXPECT_LT(started, 16) << forks->Describe();
  EXPECT_NE(forks->out.find(" 11\n"), std::string::npos) << "EAGAIN: " << forks->Describe();
  EXPECT_EQ(run.probe["rlimits"]["nofile"], json::array({1024, 1024}))
      << run.probe["rlimits"].dump();
  EXPECT_EQ(run.probe["rlimits"]["core"], json::array({0, 0})) << run.probe["rlimits"].dump();
}

// As root, --rootless adds the user namespace; the jail's ids keep their root-mode host ids.
TEST_F(RootlessTest, RootWithRootlessFlagGetsAUserNamespace) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({"--rootless"}, {"read", "/proc/self/uid_map"}, &run));
  EXPECT_EQ(ParseIdMap(run.probe["content"]), (std::vector<std::vector<long>>{{1000, 1000, 1}}))
      << run.Describe();
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({"--rootless"}, &r));
  EXPECT_EQ(r["uid"], 1000);
  EXPECT_EQ(r["CapEff"], "0000000000000000");
  EXPECT_EQ(r["CapBnd"], "0000000000000000");
  EXPECT_EQ(r["NoNewPrivs"], 1);
  EXPECT_EQ(r["Seccomp"], 2);
  EXPECT_EQ(r["groups"], json::array()) << "root may drop groups in the namespace";
  // Without --rootless, and with the jail's ids as host ids (identity: host-uid; the
  // default reserved identity has a user namespace too: identity_test.cc): the initial
  // user namespace (the whole 32-bit range, identity).
  ASSERT_NO_FATAL_FAILURE(
      RunProbeOk({"--identity", "host-uid"}, {"read", "/proc/self/uid_map"}, &run));
  EXPECT_EQ(ParseIdMap(run.probe["content"]), (std::vector<std::vector<long>>{{0, 0, 4294967295}}));
}

}  // namespace
}  // namespace corral::test
