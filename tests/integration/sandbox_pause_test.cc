// `corral pause` and `corral resume`, black-box: a paused sandbox's processes stop (no
// progress, no CPU) and keep their memory, open files and sockets through many cycles;
// an exec into it is refused with the way out; rm still removes it whole. Root only;
// leak-checked like every sandbox test.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "base/files.h"
#include "runtime/sandboxes/persistent.h"
#include "tests/integration/sandbox_fixture.h"

namespace corral::test {
namespace {

using std::chrono::milliseconds;

class SandboxPauseTest : public SandboxTest {
 protected:
  // Size of a file in the sandbox, read from the host through its init's root.
  int64_t SizeInside(const std::string& name, const std::string& path) {
    auto info = runtime::InspectSandbox(name);
    if (!info) return -1;
    struct stat st {};
    const std::string host = "/proc/" + std::to_string(info->record.init_pid) + "/root" + path;
    return ::stat(host.c_str(), &st) == 0 ? st.st_size : -1;
  }
  int64_t CpuUsec(const std::string& name) {
    nlohmann::json s = Stats(name);
    return s.value("cpu_user_usec", int64_t{0}) + s.value("cpu_system_usec", int64_t{0});
  }
  std::string Sh(const std::string& name, const std::string& script) {
    return Bash(name, script, "sh");
  }
  void Cycle(const std::string& name, int cycles, const std::string& check);
};

// What keeps running in the sandbox between the cycles (sh only, no nohup: the VM guest's
// busybox has neither bash nor nohup):
// a ticker appending through an fd it holds open, and a busy loop. Their pids go to
// /tmp/pids.
const char kTickerAndBusyLoop[] =
    "echo kept > /tmp/file; "
    "sh -c 'exec 3>>/tmp/ticks; while :; do echo t >&3; sleep 0.02; done' "
    ">/dev/null 2>&1 & echo $! >> /tmp/pids; "
    "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $! >> /tmp/pids";
// Every background pid is still there; prints the file written before the first pause.
const char kPidsAndFile[] =
    "for p in $(cat /tmp/pids); do kill -0 $p || echo gone $p; done; cat /tmp/file";
// A TCP server on the sandbox's loopback (a socket that must survive), and its answer.
const char kServer[] =
    "cd /tmp && nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 & "
    "echo $! >> /tmp/pids";
const char kServerAnswers[] =
    "for p in $(cat /tmp/pids); do kill -0 $p || echo gone $p; done; "
    "for i in $(seq 50); do python3 -c 'import urllib.request as u; "
    "print(u.urlopen(\"http://127.0.0.1:8000/file\").read().decode().strip())' 2>/dev/null "
    "&& exit 0; sleep 0.1; done; echo no answer";

// `cycles` pause/resume rounds of `name`, in which kTickerAndBusyLoop runs: after each pause
// it is frozen (no tick, no CPU, an exec refused with the way out), after each resume it
// goes on and `check` (sh) prints "kept".
void SandboxPauseTest::Cycle(const std::string& name, int cycles, const std::string& check) {
  for (int cycle = 1; cycle <= cycles; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    Result<RunResult> paused = RunCorral({"pause", name});
    ASSERT_TRUE(paused && paused->exit_code == 0) << (paused ? paused->Describe() : "");
    EXPECT_EQ(paused->out, name + "\n");
    auto info = runtime::InspectSandbox(name);
    ASSERT_TRUE(info) << info.error().message();
    EXPECT_TRUE(info->alive) << "a paused sandbox is not a removal cut short";
    EXPECT_TRUE(info->paused_seconds.has_value());
    if (cycle == 1) {
      Result<RunResult> ps = RunCorral({"ps", "--json"});
      ASSERT_TRUE(ps && ps->exit_code == 0);
      bool listed_paused = false;
      for (const auto& s : nlohmann::json::parse(ps->out, nullptr, false)) {
        if (s.value("name", "") == name) listed_paused = s.value("state", "") == "paused";
      }
      EXPECT_TRUE(listed_paused) << ps->out;
    }
    // Frozen: the ticker appends nothing and the busy loop burns no CPU.
    const int64_t ticks = SizeInside(name, "/tmp/ticks");
    const int64_t cpu = CpuUsec(name);
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(SizeInside(name, "/tmp/ticks"), ticks);
    EXPECT_LE(CpuUsec(name) - cpu, 1000) << "CPU was used while paused";
    Result<RunResult> refused = Exec(name, {"true"});
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->exit_code, 125) << refused->Describe();
    EXPECT_NE(refused->err.find("is paused; `corral resume " + name + "` first"), std::string::npos)
        << refused->err;

    Result<RunResult> resumed = RunCorral({"resume", name});
    ASSERT_TRUE(resumed && resumed->exit_code == 0) << (resumed ? resumed->Describe() : "");
    bool ticking = false;
    for (int i = 0; i < 100 && !ticking; ++i) {
      std::this_thread::sleep_for(milliseconds(20));
      ticking = SizeInside(name, "/tmp/ticks") > ticks;
    }
    EXPECT_TRUE(ticking) << "the ticker did not go on after resume";
    EXPECT_EQ(Sh(name, check), "kept\n");
  }
  auto info = runtime::InspectSandbox(name);
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->paused_seconds.has_value());
}

TEST_F(SandboxPauseTest, ProcessesFilesAndSocketsSurviveTenPauseResumeCycles) {
  std::string name = Create({"--cpus", "0.5"});
  Sh(name, kTickerAndBusyLoop);
  Sh(name, kServer);
  ASSERT_EQ(Sh(name, kServerAnswers), "kept\n") << "the background did not start";
  Cycle(name, 10, kServerAnswers);
}

// The same with sh alone, for the VM's cgroup v2 run (tests/vm: busybox, no python).
TEST_F(SandboxPauseTest, AFrozenSandboxMakesNoProgressAndAThawedOneGoesOn) {
  std::string name = Create({"--cpus", "0.5"});
  Sh(name, kTickerAndBusyLoop);
  ASSERT_EQ(Sh(name, kPidsAndFile), "kept\n") << "the background did not start";
  Cycle(name, 3, kPidsAndFile);
}

TEST_F(SandboxPauseTest, PauseAndResumeAreIdempotentAndRmRemovesAPausedSandbox) {
  Result<RunResult> missing = RunCorral({"pause", "no-such-sandbox"});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exit_code, 125);
  EXPECT_NE(missing->err.find("no-such-sandbox"), std::string::npos) << missing->err;

  std::string name = Create();
  Sh(name, "sleep 600 >/dev/null 2>&1 &");
  for (const char* verb : {"resume", "pause", "pause", "resume", "resume", "pause"}) {
    Result<RunResult> r = RunCorral({verb, name});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 0) << verb << ": " << r->Describe();
  }
  Result<RunResult> stats = RunCorral({"stats", name});
  ASSERT_TRUE(stats && stats->exit_code == 0);
  EXPECT_NE(stats->out.find("paused for"), std::string::npos) << stats->out;
  // rm kills what is frozen too, and leaves nothing (the fixture's leak check).
  Result<RunResult> rm = RunCorral({"rm", name});
  ASSERT_TRUE(rm && rm->exit_code == 0) << (rm ? rm->Describe() : "");
  EXPECT_FALSE(runtime::InspectSandbox(name));
  Result<RunResult> after = RunCorral({"resume", name});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->exit_code, 125);
}

}  // namespace
}  // namespace corral::test
