// Persistent sandboxes, black-box through `corral create/exec/ps/stats/rm`. Root only;
// leak-checked: after each test no process, mount, cgroup or state entry may remain.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "base/files.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "tests/integration/sandbox_fixture.h"
#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

const char kServe[] =
    "cd /tmp && nohup python3 -m http.server 8000 --bind 127.0.0.1 >/tmp/server.log 2>&1 &";
const char kFetchOnce[] =
    "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:8000/\", "
    "timeout=2).status)' 2>/dev/null || exit 7";
const char kFetch[] =
    "for i in $(seq 50); do python3 -c 'import urllib.request as u; "
    "print(u.urlopen(\"http://127.0.0.1:8000/\").status)' 2>/dev/null && exit 0; sleep 0.1; "
    "done; exit 7";

// A server on the sandbox's loopback, reached by later execs, with the defaults (network
// none: the sandbox's own loopback, which Landlock leaves open).
const std::vector<std::string> kLocalhostServer = {};

TEST_F(SandboxTest, BackgroundServerAnswersLaterExecsAndSurvivesAnExecTimeout) {
  std::string name = Create(kLocalhostServer);
  // An exec that waited for its background child would run into this timeout (124): exit
  // 0 says it returned with the server still running, however loaded the machine is.
  Result<RunResult> start = Exec(name, {"bash", "-c", kServe}, {"--timeout", "30"});
  ASSERT_TRUE(start) << start.error().message();
  ASSERT_EQ(start->exit_code, 0) << "exec waited for its background child: " << start->Describe();
  EXPECT_EQ(Bash(name, kFetch), "200\n");
  // An exec that times out is killed; the server started by an earlier exec is not.
  Result<RunResult> slow = Exec(name, {"sleep", "30"}, {"--timeout", "1"});
  ASSERT_TRUE(slow) << slow.error().message();
  EXPECT_EQ(slow->exit_code, 124) << slow->Describe();
  EXPECT_EQ(Bash(name, kFetch), "200\n");
}

// `out=$(corral exec NAME -- sh -c 'cmd &')`: the test reads corral's stdout and stderr
// through pipes to EOF, so an exec that handed those pipes to what it left in the background
// would not end while `sleep infinity` runs (the test would hit its 60 s limit).
TEST_F(SandboxTest, ABackgroundProcessDoesNotHoldTheExecsOutputPipesOpen) {
  std::string name = Create({});
  Result<RunResult> r =
      Exec(name, {"bash", "-c", "sleep infinity & echo started; echo on-stderr >&2"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->timed_out) << r->Describe();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, "started\n") << r->Describe();
  EXPECT_EQ(r->err, "on-stderr\n") << r->Describe();
  // Left running, as an exec's background processes are.
  EXPECT_EQ(Bash(name, "grep -lx sleep /proc/[0-9]*/comm >/dev/null && echo running"), "running\n");
}

// An exec inherits the sandbox's timeout; the report names the limit that fired with the
// value that fired (it said "600 s", the default, after `create --timeout 2`).
TEST_F(SandboxTest, ExecTimeoutReportNamesTheLimitThatFired) {
  std::string name = Create({"--timeout", "2"});
  Result<RunResult> inherited = Exec(name, {"sleep", "30"});
  ASSERT_TRUE(inherited) << inherited.error().message();
  EXPECT_EQ(inherited->exit_code, 124) << inherited->Describe();
  EXPECT_LT(inherited->wall_ms, 10000) << inherited->Describe();
  EXPECT_NE(inherited->err.find("timed out after 2 s"), std::string::npos) << inherited->Describe();
  Result<RunResult> own = Exec(name, {"sleep", "30"}, {"--timeout", "1"});
  ASSERT_TRUE(own) << own.error().message();
  EXPECT_NE(own->err.find("timed out after 1 s"), std::string::npos) << own->Describe();
}

// `create NAME -- CMD` printed the name and dropped the command; now it refuses, creates
// nothing, and says how to start the command.
TEST_F(SandboxTest, CreateWithACommandIsRefusedNotDropped) {
  std::string name = NewName();
  Result<RunResult> r = RunCorral({"create", "--name", name, "--", "python3", "-m", "http.server"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("a command was given (python3 -m http.server)"), std::string::npos)
      << r->Describe();
  EXPECT_NE(r->err.find("corral exec"), std::string::npos) << r->Describe();
  Result<RunResult> stats = RunCorral({"stats", name});
  ASSERT_TRUE(stats);
  EXPECT_NE(stats->exit_code, 0) << "a sandbox was created: " << stats->Describe();
}

TEST_F(SandboxTest, FilesPersistAcrossExecs) {
  TempDir data;
  ASSERT_TRUE(data.MakeDirs("ud", 0755));
  std::string name = Create({"--user-data", data.Join("ud")});
  Bash(name, "echo one > /tmp/a && echo two > /mnt/user-data/workspace/b");
  EXPECT_EQ(Bash(name, "cat /tmp/a /mnt/user-data/workspace/b"), "one\ntwo\n");
  EXPECT_TRUE(std::filesystem::exists(data.Join("ud/workspace/b")));
}

TEST_F(SandboxTest, ExecHasTheSameIdentityAndHardeningAsRun) {
  std::string name = Create();
  Result<RunResult> r = Exec(name, {"/opt/p", "report"});
  ASSERT_TRUE(r && r->exit_code == 0) << r->Describe();
  nlohmann::json report = nlohmann::json::parse(r->out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r->Describe();
  EXPECT_EQ(report["uid"], 1000);
  EXPECT_EQ(report["gid"], 1000);
  EXPECT_EQ(report["hostname"], "sandbox");
  for (const char* key : {"CapEff", "CapPrm", "CapBnd", "CapAmb"}) {
    EXPECT_EQ(report[key], "0000000000000000") << key;
  }
  EXPECT_EQ(report["NoNewPrivs"], 1);
  EXPECT_EQ(report["Seccomp"], 2);
  EXPECT_TRUE(report["session_leader"].get<bool>());
}

// PID 1 is the small static corral-init (jail/init), exec'd only after the init hardened
// itself: still uid 0 without capabilities, no_new_privs, seccomp.
TEST_F(SandboxTest, InitIsTheSmallHardenedCorralInit) {
  std::string name = Create();
  nlohmann::json stats = Stats(name);
  ASSERT_TRUE(stats.contains("init_pid")) << stats.dump();
  std::string proc = "/proc/" + std::to_string(stats["init_pid"].get<int>());
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink(proc + "/exe", ec).filename();
  EXPECT_EQ(exe, "corral-init");
  Result<std::string> status = ReadFile(proc + "/status");
  ASSERT_TRUE(status) << status.error().message();
  EXPECT_NE(status->find("CapEff:\t0000000000000000"), std::string::npos) << *status;
  EXPECT_NE(status->find("CapBnd:\t0000000000000000"), std::string::npos) << *status;
  EXPECT_NE(status->find("NoNewPrivs:\t1"), std::string::npos) << *status;
  EXPECT_NE(status->find("Seccomp:\t2"), std::string::npos) << *status;
  // Still reaps: a background child of an exec that ended is not left a zombie.
  // sh, not bash: this test also runs in the busybox VM guest (tests/vm).
  auto sh = [&](const std::string& script) {
    Result<RunResult> r = Exec(name, {"sh", "-c", script});
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    return r ? r->out : std::string();
  };
  std::string pid = sh("sleep 0.2 & echo $!");
  ASSERT_FALSE(pid.empty());
  pid.pop_back();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(sh("test -e /proc/" + pid + " && echo left || echo reaped"), "reaped\n");
}

TEST_F(SandboxTest, SandboxesCannotSeeEachOther) {
  std::string a = Create(kLocalhostServer);
  std::string b = Create(kLocalhostServer);
  Bash(a, kServe);
  EXPECT_EQ(Bash(a, kFetch), "200\n");
  Bash(a, "echo secret > /tmp/mine; sleep 300 >/dev/null 2>&1 &");
  // b has its own loopback, /tmp and PID namespace.
  Result<RunResult> fetch = Exec(b, {"bash", "-c", kFetchOnce});
  ASSERT_TRUE(fetch);
  EXPECT_EQ(fetch->exit_code, 7) << fetch->Describe();
  EXPECT_EQ(Bash(b, "test -e /tmp/mine && echo visible || echo absent"), "absent\n");
  EXPECT_EQ(Bash(b, "pgrep -x sleep >/dev/null && echo visible || echo absent"), "absent\n");
}

TEST_F(SandboxTest, SandboxWideLimitsHoldAcrossExecs) {
  std::string name = Create({"--pids-limit", "20", "--memory", "64m"});
  // Ten sleepers left by one exec count against the limit of the next.
  Bash(name, "for i in $(seq 10); do sleep 300 >/dev/null 2>&1 & done");
  Result<RunResult> bomb = Exec(name, {"/opt/p", "forkbomb", "1000", "60"});
  ASSERT_TRUE(bomb && bomb->exit_code == 0) << bomb->Describe();
  nlohmann::json j = nlohmann::json::parse(bomb->out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << bomb->Describe();
  EXPECT_LT(j["forked"].get<int>(), 10) << bomb->Describe();
  Result<RunResult> hog = Exec(name, {"/opt/p", "alloc", "256"}, {"--json"});
  ASSERT_TRUE(hog) << hog.error().message();
  nlohmann::json o = nlohmann::json::parse(hog->out, nullptr, false);
  EXPECT_EQ(o.value("status", ""), "oom_killed") << hog->Describe();
  EXPECT_EQ(Bash(name, "echo alive"), "alive\n");  // the sandbox itself survived
}

TEST_F(SandboxTest, RemoveLeavesNothingAndLaterExecsFailFast) {
  std::string name = Create();
  Bash(name, "sleep 300 >/dev/null 2>&1 &");
  nlohmann::json stats = Stats(name);
  ASSERT_TRUE(stats.is_object());
  ASSERT_EQ(stats["state"], "running");
  Result<RunResult> rm = RunCorral({"rm", name});
  ASSERT_TRUE(rm && rm->exit_code == 0) << rm->Describe();
  created_.clear();
  EXPECT_FALSE(std::filesystem::exists("/run/corral/sandboxes/" + name));
  Result<RunResult> exec = Exec(name, {"true"});
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->exit_code, 125);
  EXPECT_NE(exec->err.find("no sandbox named"), std::string::npos) << exec->Describe();
  EXPECT_LT(exec->wall_ms, 5000);
  // The leak check (fixture) proves no process, mount or cgroup survived.
}

TEST_F(SandboxTest, DeadSandboxIsReportedAndCleanedUp) {
  std::string name = Create();
  nlohmann::json stats = Stats(name);
  ASSERT_TRUE(stats.is_object());
  pid_t init = stats["init_pid"].get<pid_t>();
  ASSERT_EQ(kill(init, SIGKILL), 0);
  for (int i = 0; i < 100 && kill(init, 0) == 0; ++i) {
    waitpid(init, nullptr, WNOHANG);  // we may be its subreaper
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Result<RunResult> exec = Exec(name, {"true"});
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->exit_code, 125);
  EXPECT_NE(exec->err.find("is dead"), std::string::npos) << exec->Describe();
  EXPECT_LT(exec->wall_ms, 5000);
  Result<RunResult> ps = RunCorral({"ps", "--json"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  EXPECT_NE(ps->out.find("\"dead\""), std::string::npos) << ps->out;
}

// State letter of /proc/<pid>/stat, or 0 when the process is gone.
char ProcState(pid_t pid) {
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return 0;
  size_t close = stat->rfind(')');
  return close == std::string::npos || close + 2 >= stat->size() ? 0 : (*stat)[close + 2];
}

// The killed init stays a zombie for as long as nobody reaps it (this test process is
// its subreaper and waits on purpose): it is dead from the moment it exits, and an exec
// says so rather than failing to open its root.
TEST_F(SandboxTest, KilledInitIsDeadAtOnceAndExecSaysSo) {
  std::string name = Create();
  nlohmann::json stats = Stats(name);
  ASSERT_TRUE(stats.is_object());
  pid_t init = stats["init_pid"].get<pid_t>();
  ASSERT_EQ(kill(init, SIGKILL), 0);
  for (int i = 0; i < 250 && ProcState(init) != 'Z'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(ProcState(init), 'Z') << "the killed init should wait for us to reap it";
  Result<RunResult> ps = RunCorral({"ps", "--json"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  nlohmann::json list = nlohmann::json::parse(ps->out, nullptr, false);
  std::string state;
  for (const auto& s : list) {
    if (s.value("name", "") == name) state = s.value("state", "");
  }
  EXPECT_EQ(state, "dead") << ps->out;
  EXPECT_EQ(Stats(name).value("state", ""), "dead");
  Result<RunResult> exec = Exec(name, {"true"});
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->exit_code, 125);
  EXPECT_NE(exec->err.find("sandbox '" + name + "' is dead (its init exited)"), std::string::npos)
      << exec->Describe();
  EXPECT_EQ(exec->err.find("No such file"), std::string::npos) << exec->Describe();
  EXPECT_EQ(waitpid(init, nullptr, 0), init);
}

// cgroup v1 counts an OOM kill only in the exec's own cgroup, which goes when the exec
// ends: the sandbox-wide count must keep it (on v2 the parent's memory.events does).
TEST_F(SandboxTest, OomKillInAnExecShowsInSandboxStats) {
  std::string name = Create({"--memory", "64m"});
  EXPECT_EQ(Stats(name).value("oom_kills", -1), 0);
  Result<RunResult> hog = Exec(name, {"/opt/p", "alloc", "256"}, {"--json"});
  ASSERT_TRUE(hog) << hog.error().message();
  nlohmann::json o = nlohmann::json::parse(hog->out, nullptr, false);
  ASSERT_EQ(o.value("status", ""), "oom_killed") << hog->Describe();
  nlohmann::json stats = Stats(name);
  ASSERT_TRUE(stats.is_object());
  EXPECT_GE(stats.value("oom_kills", -1), 1) << stats.dump();
  // A second one adds up, and a plain exec afterwards does not reset it.
  hog = Exec(name, {"/opt/p", "alloc", "256"}, {"--json"});
  ASSERT_TRUE(hog);
  EXPECT_EQ(Bash(name, "echo ok"), "ok\n");
  EXPECT_GE(Stats(name).value("oom_kills", -1), 2);
}

// An idle sandbox is one cgroup per hierarchy (one memory cgroup: each costs kernel memory
// in proportion to the host's filesystems), its init in it; an exec's cgroup is a child
// that goes with the exec. On cgroup v2 that child has no controllers (the sandbox's
// cgroup holds the init), yet an OOM kill in the exec is still reported as one.
TEST_F(SandboxTest, AnIdleSandboxIsOneCgroupWithItsInitInIt) {
  std::string name = Create({"--memory", "64m"});
  auto info = runtime::InspectSandbox(name);
  ASSERT_TRUE(info) << info.error().message();
  auto own_cgroup = ReadFile("/proc/" + std::to_string(info->record.init_pid) + "/cgroup");
  ASSERT_TRUE(own_cgroup);
  EXPECT_NE(own_cgroup->find("/corral/" + info->record.cgroup_name + "\n"), std::string::npos)
      << "the init sits in the sandbox's cgroup itself:\n"
      << *own_cgroup;
  auto children = [&] {
    std::vector<std::string> out;
    for (const char* root : {"/sys/fs/cgroup/corral/", "/sys/fs/cgroup/memory/corral/",
                             "/sys/fs/cgroup/pids/corral/"}) {
      const std::string dir = root + info->record.cgroup_name;
      if (!std::filesystem::is_directory(dir)) continue;
      for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.is_directory()) out.push_back(e.path());
      }
    }
    return out;
  };
  EXPECT_EQ(children(), std::vector<std::string>{});
  Result<RunResult> hog = Exec(name, {"/opt/p", "alloc", "256"}, {"--json"});
  ASSERT_TRUE(hog) << hog.error().message();
  nlohmann::json o = nlohmann::json::parse(hog->out, nullptr, false);
  EXPECT_EQ(o.value("status", ""), "oom_killed") << hog->Describe();
  Result<RunResult> fine = Exec(name, {"/opt/p", "alloc", "8"}, {"--json"});
  ASSERT_TRUE(fine) << fine.error().message();
  EXPECT_EQ(nlohmann::json::parse(fine->out, nullptr, false).value("status", ""), "exited")
      << "an earlier exec's OOM kill is not this one's: " << fine->Describe();
  EXPECT_EQ(children(), std::vector<std::string>{}) << "the execs' cgroups went with them";
}

TEST_F(SandboxTest, KillingTheCliMidExecLeavesTheSandboxHealthy) {
  std::string name = Create();
  Result<pid_t> started = StartProgram({CorralBinary(), "exec", name, "--", "sleep", "60"});
  ASSERT_TRUE(started) << started.error().message();
  pid_t pid = *started;
  // Wait until the sleep runs inside.
  bool running = false;
  for (int i = 0; i < 100 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    Result<RunResult> r = Exec(name, {"bash", "-c", "pgrep -x sleep >/dev/null"});
    running = r && r->exit_code == 0;
  }
  ASSERT_TRUE(running);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  // The exec's command died with its CLI (parent-death signal); the sandbox lives.
  std::string left;
  for (int i = 0; i < 50; ++i) {
    // A zombie is dead: as a subreaper, this test process may be the one to reap it.
    left = Bash(name,
                "ps -eo stat=,comm= | awk '$2==\"sleep\" && $1 !~ /^Z/' | grep -q . "
                "&& echo running || echo gone");
    if (left == "gone\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(left, "gone\n");
  EXPECT_EQ(Bash(name, "echo ok"), "ok\n");
}

TEST_F(SandboxTest, ConcurrentExecsAllSucceed) {
  std::string name = Create();
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      Result<RunResult> r = Exec(name, {"bash", "-c", "echo " + std::to_string(i)});
      if (r && r->exit_code == 0 && r->out == std::to_string(i) + "\n") ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads);
}

TEST_F(SandboxTest, ConcurrentCreatesOfOneNameHaveOneWinner) {
  std::string name = NewName();
  created_.push_back(name);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> won{0}, lost{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      Result<RunResult> r = RunCorral({"create", "--name", name});
      if (r && r->exit_code == 0) ++won;
      if (r && r->exit_code == 125 && r->err.find("already exists") != std::string::npos) ++lost;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(lost.load(), kThreads - 1);
}

// `corral create` killed (kill -9) at any point: the name is never stranded. The next
// create of it either finds the sandbox whole (the first create had finished) or undoes
// what the dead one left and makes it anew; nothing leaks (the fixture's leak check).
TEST_F(SandboxTest, ACreateKilledAtAnyPointLeavesTheNameUsable) {
  auto store = runtime::SandboxStore::Open();
  ASSERT_TRUE(store) << store.error().message();
  int half_made = 0;
  for (int delay_ms : {1, 3, 6, 10, 15, 20, 30, 45, 60, 90}) {
    const std::string name = NewName();
    created_.push_back(name);
    Result<pid_t> started = StartProgram({CorralBinary(), "create", "--name", name});
    ASSERT_TRUE(started) << started.error().message();
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(*started, SIGKILL);
    ASSERT_EQ(::waitpid(*started, nullptr, 0), *started);
    const std::string dir = store->DirOf(name);
    if (::access(dir.c_str(), F_OK) == 0 && ::access((dir + "/state.json").c_str(), F_OK) != 0) {
      ++half_made;
    }
    Result<RunResult> again = RunCorral({"create", "--name", name});
    ASSERT_TRUE(again) << again.error().message();
    if (again->exit_code != 0) {
      // Only because the killed create had finished: the sandbox is there and works.
      EXPECT_NE(again->err.find("already exists"), std::string::npos) << again->Describe();
      EXPECT_TRUE(runtime::InspectSandbox(name))
          << "killed after " << delay_ms << " ms: " << again->Describe();
    }
    Result<RunResult> works = Exec(name, {"true"});
    ASSERT_TRUE(works);
    EXPECT_EQ(works->exit_code, 0) << "killed after " << delay_ms << " ms: " << works->Describe();
  }
  RecordProperty("creates_killed_half_way", half_made);
  std::cerr << "[figure] " << half_made << " of 10 creates were killed half-way\n";
}

TEST_F(SandboxTest, InvalidNamesAreRejected) {
  for (const std::string& bad :
       std::vector<std::string>{"../x", "a/b", "", "has space", std::string(65, 'a')}) {
    Result<RunResult> r = RunCorral({"create", "--name", bad});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 125) << bad;
  }
  Result<RunResult> r = Exec("../../etc", {"true"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 125);
}

}  // namespace
}  // namespace corral::test
