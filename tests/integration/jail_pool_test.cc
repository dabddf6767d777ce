// runtime::JailPool: jails prepared before their commands are known must be exactly as
// fresh and as isolated as RunJail's, and take their command, environment, working
// directory and limits from the request. In-process; root only; leak-checked (the pool's
// destructor must leave no process, mount or cgroup behind).
#include "runtime/pool/jail_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <map>

#include "runtime/run/outcome.h"
#include "tests/support/jail_test.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

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

// Our children (any thread's), by command name.
std::multimap<std::string, pid_t> OurChildren() {
  std::multimap<std::string, pid_t> out;
  for (const ChildStatus& c : ChildrenOf(::getpid())) {
    out.emplace(StatusField(c.status, "Name"), c.pid);
  }
  return out;
}

// Whether `pid` is in our PID namespace. A jail is in a new one from the moment it is
// cloned, while it may still carry the spawner's name (it renames itself first thing, but
// that can be ahead of it): this, not the name, tells the spawner from its jails.
bool InOurPidNamespace(pid_t pid) {
  struct stat ours, theirs;
  return ::stat("/proc/self/ns/pid", &ours) == 0 &&
         ::stat(("/proc/" + std::to_string(pid) + "/ns/pid").c_str(), &theirs) == 0 &&
         ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev;
}

TEST_F(JailPoolTest, JailsAreClonedByASpawnerAsChildrenOfThePoolsOwner) {
  std::multimap<std::string, pid_t> before = OurChildren();
  pid_t spawner = -1;
  {
    auto pool = JailPool::Create(JailSpec(), 2);
    ASSERT_TRUE(pool) << pool.error().message();
    ASSERT_TRUE((*pool)->WaitUntilFull());
    // A jail names itself corral-init first thing, but that may still be ahead of it.
    std::multimap<std::string, pid_t> now = OurChildren();
    for (int i = 0; i < 500 && now.count("corral-init") < before.count("corral-init") + 2; ++i) {
      ::usleep(10 * 1000);
      now = OurChildren();
    }
    EXPECT_EQ(now.count("corral-spawner"), before.count("corral-spawner") + 1);
    EXPECT_EQ(now.count("corral-init"), before.count("corral-init") + 2);
    for (auto [name, pid] : now) {
      if (name == "corral-spawner" && before.find(name) == before.end()) spawner = pid;
    }
    // Jails it cloned are ours: a run reaps and signals them as before.
    runtime::RunOutcome out = RunOk(**pool, Command({"sh", "-c", "echo $$"}));
    EXPECT_EQ(out.stdout_stream.text, "2\n");
  }
  ASSERT_GT(spawner, 0);
  EXPECT_NE(::kill(spawner, 0), 0) << "the spawner outlived its pool";
}

TEST_F(JailPoolTest, APoolWhoseSpawnerDiedClonesItsJailsItself) {
  std::multimap<std::string, pid_t> before = OurChildren();
  auto pool = JailPool::Create(JailSpec(), 1);
  ASSERT_TRUE(pool) << pool.error().message();
  ASSERT_TRUE((*pool)->WaitUntilFull());
  pid_t spawner = -1;
  for (auto [name, pid] : OurChildren()) {
    bool seen = false;
    for (auto [old_name, old_pid] : before) seen = seen || old_pid == pid;
    // The jail just cloned may still be named corral-spawner: killing it instead of the
    // spawner made the first run below end with SIGKILL (found with the kernel's
    // signal_generate and sched_process_fork trace events).
    if (name == "corral-spawner" && !seen && InOurPidNamespace(pid)) {
      ASSERT_EQ(spawner, -1) << "two spawners";
      spawner = pid;
    }
  }
  ASSERT_GT(spawner, 0);
  ASSERT_EQ(::kill(spawner, SIGKILL), 0);  // reaped by the pool's destructor
  for (int i = 0; i < 3; ++i) {
    runtime::RunOutcome out = RunOk(**pool, Command({"sh", "-c", "echo $$"}));
    EXPECT_EQ(out.status, RunStatus::kExited)
        << "run " << i << ", signal " << out.signal.value_or(0) << ", stderr "
        << out.stderr_stream.text;
    EXPECT_EQ(out.stdout_stream.text, "2\n") << "run " << i;
  }
}

TEST_F(JailPoolTest, AJailTheSpawnerCannotBuildIsAnErrorSayingWhy) {
  TempDir skills;
  JailSpec spec;
  spec.skills_dir = skills.Join("skills");
  ASSERT_TRUE(skills.MakeDirs("skills"));
  auto pool = JailPool::Create(spec, 1);
  ASSERT_TRUE(pool) << pool.error().message();
  ASSERT_TRUE((*pool)->WaitUntilFull());
  // Gone after the pool was checked: the next jail, planned in the spawner, cannot bind it.
  ASSERT_EQ(::rmdir(spec.skills_dir->c_str()), 0);
  JailSpec run = spec;
  run.argv = {"true"};
  runtime::RunOptions options;
  ASSERT_TRUE((*pool)->Run(run, options));  // the jail prepared before still runs
  auto failed = (*pool)->Run(run, options);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find(*spec.skills_dir), std::string::npos)
      << failed.error().message();
}

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

TEST_F(JailPoolTest, AWorkingDirectoryOutsideTheJailsMountsRunsInAJailOfItsOwn) {
  auto pool = JailPool::Create(JailSpec(), 1);
  ASSERT_TRUE(pool) << pool.error().message();
  // /work lies in the read-only root of a prepared jail: a cold run gives it a tmpfs.
  JailSpec spec = Command({"sh", "-c", "pwd; touch made && echo wrote"});
  spec.workdir = "/work";
  std::optional<std::string> why = (*pool)->Unfit(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("/work lies outside the prepared jails' mounts"), std::string::npos) << *why;
  runtime::RunOutcome out = RunOk(**pool, spec);
  EXPECT_FALSE(out.pooled);
  EXPECT_EQ(out.stdout_stream.text, "/work\nwrote\n") << out.stderr_stream.text;
  spec.workdir = "/tmp/a";  // inside /tmp's mount: made when the command starts
  EXPECT_FALSE((*pool)->Unfit(spec).has_value());
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

// The network policy is part of what a run must match: a pooled jail's proxy was started
// with the pool's policy, so any other mode, rule, order, cap or resolver override runs in
// a jail (and with a proxy) of its own.
TEST_F(JailPoolTest, AnAllowListPoolFitsOnlyItsOwnNetworkPolicy) {
  TempDir runtime_dir;  // the proxies' log and summaries
  ::setenv("CORRAL_RUNTIME_DIR", runtime_dir.path().c_str(), 1);
  struct Unset {
    ~Unset() { ::unsetenv("CORRAL_RUNTIME_DIR"); }
  } unset;
  JailSpec base;
  base.network.mode = runtime::NetworkMode::kAllowlist;
  base.network.allow = {"allowed.test:8080", "*.wild.test"};
  base.network.deny = {"bad.wild.test"};
  base.unsafe.network_resolve = {{"allowed.test", "127.0.0.1"}};
  auto pool = JailPool::Create(base, 1);
  ASSERT_TRUE(pool) << pool.error().message();

  JailSpec same = base;
  same.argv = {"true"};
  same.env = {{"A", "b"}};
  EXPECT_EQ((*pool)->Unfit(same), std::nullopt);

  std::vector<std::pair<std::string, JailSpec>> others;
  auto with = [&](const std::string& what, auto change) {
    JailSpec spec = same;
    change(spec);
    others.emplace_back(what, std::move(spec));
  };
  with("mode none", [](JailSpec& s) {
    s = JailSpec();
    s.argv = {"true"};
  });
  with("another allow rule", [](JailSpec& s) { s.network.allow.push_back("pypi.test"); });
  with("one allow rule fewer", [](JailSpec& s) { s.network.allow.pop_back(); });
  with("the rules reordered",
       [](JailSpec& s) { std::swap(s.network.allow[0], s.network.allow[1]); });
  with("no deny rule", [](JailSpec& s) { s.network.deny.clear(); });
  with("another deny rule", [](JailSpec& s) { s.network.deny.push_back("allowed.test"); });
  with("max_connections", [](JailSpec& s) { s.network.max_connections = 1; });
  with("max_bytes", [](JailSpec& s) { s.network.max_bytes = 1024; });
  with("network_resolve", [](JailSpec& s) { s.unsafe.network_resolve.clear(); });
  for (const auto& [what, spec] : others) {
    auto why = (*pool)->Unfit(spec);
    ASSERT_TRUE(why.has_value()) << what << " fits the pool";
    EXPECT_TRUE(why->find("/network") != std::string::npos ||
                why->find("/unsafe/network_resolve") != std::string::npos)
        << what << ": " << *why;
  }

  // The fitting run is served by a pooled jail whose proxy's summary is the outcome's.
  JailSpec run = Command({"true"});
  run.network = base.network;
  run.unsafe = base.unsafe;
  runtime::RunOutcome out = RunOk(**pool, run);
  EXPECT_TRUE(out.pooled);
  EXPECT_NE(out.network_json.find("\"sandbox\":\"pool-" + std::to_string(::getpid()) + "-"),
            std::string::npos)
      << out.network_json;
}

}  // namespace
}  // namespace corral::test
