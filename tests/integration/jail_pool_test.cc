// runtime::JailPool: jails prepared before their commands are known must be exactly as
// fresh and as isolated as RunJail's, and take their command, environment, working
// directory and limits from the request. In-process; root only; leak-checked (the pool's
// destructor must leave no process, mount or cgroup behind).
#include "runtime/jail_pool.h"

#include <gtest/gtest.h>

#include "runtime/outcome.h"
#include "tests/support/jail_test.h"

namespace corral::test {
namespace {

using runtime::JailPool;
using runtime::JailSpec;
using runtime::RunStatus;

class JailPoolTest : public JailTest {
 protected:
  static JailSpec Command(std::vector<std::string> argv) {
    JailSpec spec;
    spec.argv = std::move(argv);
    spec.limits.timeout_seconds = 20;
    return spec;
  }

  static runtime::RunOutcome RunOk(JailPool& pool, const JailSpec& spec) {
    runtime::RunOptions options;
    options.capture_output = true;
    auto outcome = pool.Run(spec, options);
    EXPECT_TRUE(outcome) << outcome.error().message();
    if (!outcome) return {};
    return *outcome;
  }
};

TEST_F(JailPoolTest, EachRunGetsAFreshIsolatedJail) {
  auto pool = JailPool::Create(JailSpec(), 2);
  ASSERT_TRUE(pool) << pool.error().message();
  ASSERT_TRUE((*pool)->WaitUntilFull());
  const char* script =
      "echo pid=$$ uid=$(id -u) host=$(hostname); test -e /tmp/mark && echo seen || echo fresh; "
      "touch /tmp/mark; grep -c : /proc/net/dev";
  for (int i = 0; i < 3; ++i) {  // more runs than jails ready: the third is prepared on demand
    runtime::RunOutcome out = RunOk(**pool, Command({"sh", "-c", script}));
    EXPECT_EQ(out.status, RunStatus::kExited) << out.stderr_stream.text;
    EXPECT_EQ(out.stdout_stream.text, "pid=2 uid=1000 host=sandbox\nfresh\n1\n") << "run " << i;
  }
}

TEST_F(JailPoolTest, CommandEnvWorkdirAndExitCodeComeFromTheRequest) {
  auto pool = JailPool::Create(JailSpec(), 1);
  ASSERT_TRUE(pool) << pool.error().message();
  JailSpec spec = Command({"sh", "-c", "echo $GREETING; pwd; exit 3"});
  spec.env = {{"GREETING", "hello"}};
  spec.workdir = "/tmp";
  ASSERT_TRUE((*pool)->Fits(spec));
  runtime::RunOutcome out = RunOk(**pool, spec);
  EXPECT_EQ(out.status, RunStatus::kExited);
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_EQ(out.stdout_stream.text, "hello\n/tmp\n");
  // PATH search happens inside the jail, as in RunJail: a missing command is 127.
  runtime::RunOutcome missing = RunOk(**pool, Command({"no-such-command-here"}));
  EXPECT_EQ(missing.status, RunStatus::kSetupFailed);
  EXPECT_EQ(runtime::CliExitCode(missing), 127);
}

TEST_F(JailPoolTest, TimeoutStillKillsThePooledJail) {
  auto pool = JailPool::Create(JailSpec(), 1);
  ASSERT_TRUE(pool) << pool.error().message();
  ASSERT_TRUE((*pool)->WaitUntilFull());
  JailSpec spec = Command({"sh", "-c", "sleep 30 & sleep 30"});
  spec.limits.timeout_seconds = 1;
  runtime::RunOutcome out = RunOk(**pool, spec);
  EXPECT_EQ(out.status, RunStatus::kTimedOut);
  EXPECT_LT(out.wall_ms, 10000);
}

TEST_F(JailPoolTest, ASpecThatDoesNotFitRunsInAJailOfItsOwn) {
  auto pool = JailPool::Create(JailSpec(), 1);
  ASSERT_TRUE(pool) << pool.error().message();
  JailSpec spec = Command({"hostname"});
  spec.hostname = "elsewhere";
  EXPECT_FALSE((*pool)->Fits(spec));
  runtime::RunOutcome out = RunOk(**pool, spec);
  EXPECT_EQ(out.stdout_stream.text, "elsewhere\n");
}

}  // namespace
}  // namespace corral::test
