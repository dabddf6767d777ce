// `corral pool` + `corral run --pool`: runs served by a pool server must be as fresh and as
// isolated as cold ones, keep `corral run`'s contract (exit codes, passthrough stdio,
// --json, timeouts, Ctrl-C), fall back to a cold run for a spec the pool cannot take, and
// the server must refuse other users, refuse a second server on its socket, and leave
// nothing behind when stopped. Black-box through the binary; root only; leak-checked.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/files.h"
#include "runtime/pool/pool_client.h"
#include "runtime/pool/pool_protocol.h"
#include "runtime/pool/pool_socket.h"
#include "runtime/sandboxes/persistent.h"
#include "tests/support/jail_test.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

class PoolServerTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    socket_ = dir_.Join("pool.sock");
    auto pid = StartProgram({CorralBinary(), "pool", "--size", "1", "--socket", socket_});
    ASSERT_TRUE(pid) << pid.error().message();
    server_ = *pid;
    struct stat st;
    for (int i = 0; i < 500 && ::stat(socket_.c_str(), &st) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Status ready = runtime::WaitForPoolReady(socket_);
    ASSERT_TRUE(ready) << "pool server did not come up: " << ready.error().message();
  }

  void TearDown() override { EXPECT_EQ(StopServer(), 0); }

  // SIGTERM to the server; its exit status (-1 if it had to be killed).
  int StopServer() {
    if (server_ <= 0) return 0;
    ::kill(server_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(server_, &status, WNOHANG) == server_) {
        server_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(server_, SIGKILL);
    ::waitpid(server_, &status, 0);
    server_ = -1;
    return -1;
  }

  Result<JailRun> Pooled(const std::vector<std::string>& flags,
                         const std::vector<std::string>& command) {
    std::vector<std::string> args = {"run", "--json", "--pool", socket_};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return RunJailed(CorralBinary(), args);
  }

  TempDir dir_;
  std::string socket_;
  pid_t server_ = -1;
};

TEST_F(PoolServerTest, EachPooledRunGetsAFreshIsolatedJail) {
  const char* script =
      "echo pid=$$ uid=$(id -u) host=$(hostname); test -e /tmp/mark && echo seen || echo fresh; "
      "touch /tmp/mark; grep -c : /proc/net/dev";
  for (int i = 0; i < 3; ++i) {  // more runs than jails kept ready
    auto run = Pooled({}, {"sh", "-c", script});
    ASSERT_TRUE(run) << run.error().message();
    EXPECT_EQ(run->outcome.value("pooled", false), true) << run->Describe();
    EXPECT_EQ(run->outcome["status"], "exited") << run->Describe();
    EXPECT_EQ(run->outcome["stdout"], "pid=2 uid=1000 host=sandbox\nfresh\n1\n") << run->Describe();
    EXPECT_TRUE(run->outcome["memory_peak_bytes"].is_number()) << run->Describe();
  }
}

TEST_F(PoolServerTest, ExitCodeStdioEnvAndWorkdirPassThrough) {
  auto run = RunCorral({"run", "--pool", socket_, "-e", "GREETING=hello", "-w", "/tmp", "--", "sh",
                        "-c", "echo $GREETING; pwd; echo oops >&2; exit 3"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 3) << run->Describe();
  EXPECT_EQ(run->out, "hello\n/tmp\n") << run->Describe();
  EXPECT_EQ(run->err, "oops\n") << run->Describe();

  auto missing = RunCorral({"run", "--pool", socket_, "--", "/no/such/program"});
  ASSERT_TRUE(missing) << missing.error().message();
  EXPECT_EQ(missing->exit_code, 127) << missing->Describe();
}

TEST_F(PoolServerTest, StdinIsPassedWhenAsked) {
  RunOptions options;
  options.stdin_data = "from the client\n";
  auto run = RunCorral({"run", "--pool", socket_, "-i", "--", "cat"}, options);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 0) << run->Describe();
  EXPECT_EQ(run->out, "from the client\n") << run->Describe();
}

TEST_F(PoolServerTest, ASpecThePoolCannotTakeRunsCold) {
  auto run = Pooled({"--memory", "100m"}, {"sh", "-c", "echo cold"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "exited") << run->Describe();
  EXPECT_EQ(run->outcome["stdout"], "cold\n") << run->Describe();
  EXPECT_FALSE(run->outcome.contains("pooled")) << run->Describe();
}

TEST_F(PoolServerTest, MegabytesOfCapturedOutputComeBackWhole) {
  auto run = Pooled({}, {"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; printf '\\377'"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome.value("pooled", false), true) << run->Describe();
  EXPECT_EQ(run->outcome["stdout_bytes"], 3000001) << run->Describe();
  ASSERT_TRUE(run->outcome["stdout"].is_string());
  // The JSON outcome replaces the invalid byte; 3,000,000 'a's come first.
  std::string text = run->outcome["stdout"].get<std::string>();
  EXPECT_EQ(text.substr(0, 3000000), std::string(3000000, 'a'));
}

TEST_F(PoolServerTest, AnOutputLimitTooLargeForAReplyRunsCold) {
  auto run = Pooled({"--output-limit", "64m"}, {"echo", "big"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["stdout"], "big\n") << run->Describe();
  EXPECT_FALSE(run->outcome.contains("pooled")) << run->Describe();
}

TEST_F(PoolServerTest, TheRequestsTimeoutIsEnforced) {
  auto run = Pooled({"--timeout", "1"}, {"sleep", "30"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "timed_out") << run->Describe();
  EXPECT_EQ(run->outcome.value("pooled", false), true) << run->Describe();
  EXPECT_EQ(run->run.exit_code, 124) << run->Describe();
  EXPECT_LT(run->run.wall_ms, 10000) << run->Describe();
}

TEST_F(PoolServerTest, CtrlCOnTheClientStopsThePooledCommand) {
  auto client = StartProgram({CorralBinary(), "run", "--pool", socket_, "--", "sleep", "30"});
  ASSERT_TRUE(client) << client.error().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto start = std::chrono::steady_clock::now();
  ::kill(*client, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(*client, &status, 0), *client);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  EXPECT_LT(took, std::chrono::seconds(5));
}

// A sandbox for exec tests, removed at the end of the test.
class PooledSandbox {
 public:
  explicit PooledSandbox(std::string name, std::vector<std::string> flags = {})
      : name_(std::move(name)) {
    std::vector<std::string> args = {"create", "--name", name_};
    args.insert(args.end(), flags.begin(), flags.end());
    auto created = RunCorral(args);
    EXPECT_TRUE(created && created->exit_code == 0) << (created ? created->Describe() : "");
  }
  ~PooledSandbox() { (void)RunCorral({"rm", name_}); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// A pooled run (served by the front program itself) and a pooled exec hand the server the
// client's fds: the server relays a terminal through the filter and a file raw, as a cold
// run does (runtime/run/stdio.h).
TEST_F(PoolServerTest, PooledOutputToATerminalIsFilteredAndFilesShowNoHostPath) {
  RunOptions pty;
  pty.use_pty = true;
  auto run = RunCorral(
      {"run", "--pool", socket_, "--", "printf", "a\\033]52;c;ZXZpbA==\\007b\\033[32mg\\033[0m\\n"},
      pty);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 0) << run->Describe();
  EXPECT_NE(run->out.find("ab\x1b[32mg\x1b[0m\r\n"), std::string::npos) << run->Describe();
  EXPECT_EQ(run->out.find("\x1b]"), std::string::npos) << run->Describe();

  PooledSandbox sandbox("pool-fd-" + std::to_string(::getpid()));
  std::string out = dir_.Join("out");
  for (int i = 0; i < 5; ++i) {  // the first exec is cold; a slot serves the next ones
    std::string script = CorralBinary() + " run --pool " + socket_ +
                         " -- readlink /proc/self/fd/1 > " + out + "; " + CorralBinary() +
                         " exec --pool " + socket_ + " " + sandbox.name() +
                         " -- readlink /proc/self/fd/1 >> " + out;
    auto r = RunProgram("/bin/sh", {"-c", script});
    ASSERT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    std::ifstream in(out);
    std::string first, second;
    std::getline(in, first);
    std::getline(in, second);
    EXPECT_EQ(first.rfind("pipe:", 0), 0u) << first;
    EXPECT_EQ(second.rfind("pipe:", 0), 0u) << second;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

TEST_F(PoolServerTest, ExecsIntoASandboxUseAnExecSlotAfterTheFirst) {
  PooledSandbox sandbox("pool-test-" + std::to_string(::getpid()));
  auto exec = [&](const std::vector<std::string>& extra, const std::string& script) {
    std::vector<std::string> args = {"exec", "--json", "--pool", socket_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {sandbox.name(), "--", "sh", "-c", script});
    return RunJailed(CorralBinary(), args);
  };
  auto first = exec({}, "echo state > /tmp/kept; id -u");
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->outcome["stdout"], "1000\n") << first->Describe();
  EXPECT_FALSE(first->outcome.contains("pooled")) << "no slot can be ready before the first exec";
  // The server prepares a slot after the first exec; wait for it to be taken.
  Result<JailRun> pooled = Error(ErrorCode::kNotFound, "never pooled");
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pooled = exec({"-e", "GREETING=hi", "-w", "/tmp"},
                  "cat /tmp/kept; echo $GREETING; pwd; id -u; grep -c CapEff:.0000000000000000 "
                  "/proc/self/status; exit 4");
    ASSERT_TRUE(pooled) << pooled.error().message();
    if (pooled->outcome.value("pooled", false)) break;
  }
  ASSERT_EQ(pooled->outcome.value("pooled", false), true) << pooled->Describe();
  EXPECT_EQ(pooled->outcome["stdout"], "state\nhi\n/tmp\n1000\n1\n") << pooled->Describe();
  EXPECT_EQ(pooled->outcome["exit_code"], 4) << pooled->Describe();
  EXPECT_EQ(pooled->run.exit_code, 4) << pooled->Describe();

  // A slot is ready again; the exec's own timeout applies in it.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto timed = exec({"--timeout", "1"}, "sleep 30");
  ASSERT_TRUE(timed) << timed.error().message();
  EXPECT_EQ(timed->outcome.value("pooled", false), true) << timed->Describe();
  EXPECT_EQ(timed->outcome["status"], "timed_out") << timed->Describe();
  EXPECT_EQ(timed->run.exit_code, 124) << timed->Describe();
}

// /proc/<pid>/status of the server's children that are in another PID namespace and are
// neither a one-shot jail's init nor the spawner: exec slots.
std::vector<std::string> ExecSlotsOf(pid_t server) {
  std::vector<std::string> out;
  for (const ChildStatus& c : ChildrenOf(server)) {
    std::string name = StatusField(c.status, "Name");
    bool nested = StatusField(c.status, "NSpid").find('\t') != std::string::npos;
    if (nested && name != "corral-init" && name != "corral-spawner") out.push_back(c.status);
  }
  return out;
}

// "ID\tID\tID\tID" (real, effective, saved, filesystem), the Uid and Gid lines of
// /proc/<pid>/status for a process with the sandbox's host ids, which an exec's outcome
// names: a reserved id no account has by default (runtime/run/identity.h), 1000 under
// identity: host-uid.
std::pair<std::string, std::string> HostIdLines(const nlohmann::json& outcome) {
  auto line = [](unsigned id) {
    const std::string s = std::to_string(id);
    return s + "\t" + s + "\t" + s + "\t" + s;
  };
  const nlohmann::json& id = outcome["identity"];
  return {line(id.value("host_uid", 0u)), line(id.value("host_gid", 0u))};
}

TEST_F(PoolServerTest, AWaitingExecSlotHasTheSandboxsIdentityAndNoPrivileges) {
  PooledSandbox sandbox("pool-slot-" + std::to_string(::getpid()));
  auto run = RunJailed(CorralBinary(),
                       {"exec", "--json", "--pool", socket_, sandbox.name(), "--", "true"});
  ASSERT_TRUE(run && run->run.exit_code == 0) << (run ? run->Describe() : run.error().message());
  ASSERT_TRUE(run->outcome.contains("identity")) << run->Describe();
  const auto [uid_line, gid_line] = HostIdLines(run->outcome);
  std::vector<std::string> slots;
  for (int i = 0; i < 100 && slots.empty(); ++i) {  // the slot gets prepared after the exec
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    slots = ExecSlotsOf(server_);
  }
  ASSERT_EQ(slots.size(), 1u);
  const std::string& slot = slots[0];
  EXPECT_EQ(StatusField(slot, "Uid"), uid_line) << slot;
  EXPECT_EQ(StatusField(slot, "Gid"), gid_line) << slot;
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_EQ(StatusField(slot, set), "0000000000000000") << set << "\n" << slot;
  }
  EXPECT_EQ(StatusField(slot, "NoNewPrivs"), "1") << slot;
  // The default profile allows all the slot still calls: its filter is in force already.
  EXPECT_EQ(StatusField(slot, "Seccomp"), "2") << slot;
}

TEST_F(PoolServerTest, ASlotWhoseFilterWouldRefuseItsOwnCallsInstallsItAtTheExec) {
  // The default profile, but write allowed for at most 100 bytes at a time: a slot cannot
  // know in advance what it will write, so it waits unfiltered and installs the filter at
  // the exec.
  auto text = ReadFile(std::string(CORRAL_SOURCE_DIR) + "/seccomp-profiles/default.json");
  ASSERT_TRUE(text) << text.error().message();
  nlohmann::json profile = nlohmann::json::parse(*text);
  for (auto& rule : profile["syscalls"]) {
    auto& names = rule["names"];
    names.erase(std::remove(names.begin(), names.end(), "write"), names.end());
  }
  profile["syscalls"].push_back(
      {{"names", {"write"}},
       {"action", "SCMP_ACT_ALLOW"},
       {"args", {{{"index", 2}, {"value", 100}, {"op", "SCMP_CMP_LE"}}}}});
  ASSERT_TRUE(dir_.WriteFile("profile.json", profile.dump()));
  PooledSandbox sandbox("pool-seccomp-" + std::to_string(::getpid()),
                        {"--seccomp", dir_.Join("profile.json")});
  auto exec = [&](const std::string& script) {
    return RunJailed(CorralBinary(), {"exec", "--json", "--pool", socket_, sandbox.name(), "--",
                                      "sh", "-c", script});
  };
  auto first = exec("true");
  ASSERT_TRUE(first && first->run.exit_code == 0) << (first ? first->Describe() : "");
  std::vector<std::string> slots;
  for (int i = 0; i < 100 && slots.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    slots = ExecSlotsOf(server_);
  }
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(StatusField(slots[0], "Seccomp"), "0") << slots[0];
  EXPECT_EQ(StatusField(slots[0], "Uid"), HostIdLines(first->outcome).first) << slots[0];
  // The exec through it runs under the filter: 4 bytes may be written, 200 may not.
  auto pooled = exec(
      "echo out; head -c 200 /dev/zero >/dev/null 2>&1 || echo refused; "
      "grep Seccomp: /proc/self/status");
  ASSERT_TRUE(pooled) << pooled.error().message();
  EXPECT_EQ(pooled->outcome.value("pooled", false), true) << pooled->Describe();
  EXPECT_EQ(pooled->outcome["stdout"], "out\nrefused\nSeccomp:\t2\n") << pooled->Describe();
}

TEST_F(PoolServerTest, RemovingASandboxWithAWaitingSlotLeavesNothing) {
  pid_t init_pid = 0;
  {
    PooledSandbox sandbox("pool-rm-" + std::to_string(::getpid()));
    auto run = RunCorral({"exec", "--pool", socket_, sandbox.name(), "--", "true"});
    ASSERT_TRUE(run && run->exit_code == 0) << (run ? run->Describe() : run.error().message());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the slot gets prepared
    auto info = runtime::InspectSandbox(sandbox.name());
    ASSERT_TRUE(info) << info.error().message();
    init_pid = info->record.init_pid;
  }  // corral rm: kills the slot with the rest of the sandbox
  // With no further request, the server reaps the dead slot at once: a zombie slot would
  // also keep the sandbox's init from finishing its exit (a PID namespace's init waits for
  // every process of the namespace to be reaped).
  auto zombies = [&] {
    size_t n = 0;
    for (const ChildStatus& c : ChildrenOf(server_)) n += StatusField(c.status, "State")[0] == 'Z';
    return n;
  };
  // The init has exited when it is gone or a zombie (of whoever adopted it: this test
  // process, if it is a subreaper).
  auto init_state = [&] {
    auto status = ReadFile("/proc/" + std::to_string(init_pid) + "/status");
    return status ? StatusField(*status, "State")[0] : 'X';
  };
  bool settled = false;
  for (int i = 0; i < 60 && !settled; ++i) {
    settled = zombies() == 0 && (init_state() == 'X' || init_state() == 'Z');
    if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(settled) << zombies() << " zombie children of the pool server; the removed "
                       << "sandbox's init is in state " << init_state();
  // And the server keeps serving.
  auto after = RunCorral({"run", "--pool", socket_, "--", "true"});
  ASSERT_TRUE(after) << after.error().message();
  EXPECT_EQ(after->exit_code, 0) << after->Describe();
}

// Slots are found by the name in the request: one left from a removed sandbox must not
// serve a new sandbox created under the same name.
TEST_F(PoolServerTest, ASandboxCreatedAgainUnderItsNameIsNotServedByTheOldSlot) {
  const std::string name = "pool-again-" + std::to_string(::getpid());
  {
    PooledSandbox first(name);
    auto run =
        RunCorral({"exec", "--pool", socket_, name, "--", "sh", "-c", "echo old > /tmp/mark"});
    ASSERT_TRUE(run && run->exit_code == 0) << (run ? run->Describe() : run.error().message());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the slot gets prepared
  }
  PooledSandbox second(name);
  auto again = RunJailed(CorralBinary(), {"exec", "--json", "--pool", socket_, name, "--", "sh",
                                          "-c", "cat /tmp/mark 2>/dev/null || echo fresh"});
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->outcome["stdout"], "fresh\n") << again->Describe();
  EXPECT_FALSE(again->outcome.contains("pooled")) << "the old slot died with its sandbox";
}

// The `corral` program serves the plainest run and exec itself (cli/front): with the full
// CLI made unreachable they still work, and anything else fails for want of it.
TEST_F(PoolServerTest, TheFrontServesPlainRunsAndExecsWithoutTheFullCli) {
  PooledSandbox sandbox("pool-front-" + std::to_string(::getpid()));
  ASSERT_TRUE(RunCorral({"exec", "--pool", socket_, sandbox.name(), "--", "true"}));
  RunOptions no_cli;
  no_cli.env = {"CORRAL_CLI_PROGRAM=" + dir_.Join("no-such-cli")};

  auto run = RunCorral(
      {"run", "--pool", socket_, "--", "sh", "-c", "echo hi; echo err >&2; exit 7"}, no_cli);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 7) << run->Describe();
  EXPECT_EQ(run->out, "hi\n") << run->Describe();
  EXPECT_EQ(run->err, "err\n") << run->Describe();

  RunOptions no_cli_stdin = no_cli;
  no_cli_stdin.stdin_data = "typed\n";
  auto cat = RunCorral({"run", "--pool=" + socket_, "-i", "--", "cat"}, no_cli_stdin);
  ASSERT_TRUE(cat) << cat.error().message();
  EXPECT_EQ(cat->out, "typed\n") << cat->Describe();

  // The exec slot is prepared after the first exec: until it is, the pool declines.
  Result<RunResult> exec = Error(ErrorCode::kNotFound, "never served");
  for (int i = 0; i < 50; ++i) {
    exec = RunCorral({"exec", "--pool", socket_, sandbox.name(), "--", "sh", "-c", "id -u; exit 5"},
                     no_cli);
    ASSERT_TRUE(exec) << exec.error().message();
    if (exec->exit_code != 125) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(exec->exit_code, 5) << exec->Describe();
  EXPECT_EQ(exec->out, "1000\n") << exec->Describe();

  auto json = RunCorral({"run", "--json", "--pool", socket_, "--", "true"}, no_cli);
  ASSERT_TRUE(json) << json.error().message();
  EXPECT_EQ(json->exit_code, 125) << json->Describe();
  EXPECT_NE(
      json->err.find("cannot start the corral CLI program (looked for " + dir_.Join("no-such-cli")),
      std::string::npos)
      << json->Describe();
}

// What the pool declines is run by the full CLI with --pool off (not asked twice), and what
// the front does not parse reaches the full CLI unchanged.
TEST_F(PoolServerTest, RequestsThePoolDeclinesGoToTheFullCliWithThePoolOff) {
  std::string cli = CorralBinary().substr(0, CorralBinary().rfind('/')) + "/corral-cli";
  std::string log = dir_.Join("cli-args.log");
  std::string wrapper = dir_.Join("cli-wrapper");
  {
    std::FILE* f = std::fopen(wrapper.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "#!/bin/sh\necho \"$*\" >> %s\nexec %s \"$@\"\n", log.c_str(), cli.c_str());
    std::fclose(f);
    ASSERT_EQ(::chmod(wrapper.c_str(), 0755), 0);
  }
  RunOptions logged;
  logged.env = {"CORRAL_CLI_PROGRAM=" + wrapper};
  PooledSandbox sandbox("pool-decline-" + std::to_string(::getpid()));
  auto first =
      RunCorral({"exec", "--pool", socket_, sandbox.name(), "--", "echo", "first"}, logged);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->exit_code, 0) << first->Describe();
  EXPECT_EQ(first->out, "first\n") << first->Describe();
  auto flagged =
      RunCorral({"run", "--pool", socket_, "--memory", "100m", "--", "echo", "cold"}, logged);
  ASSERT_TRUE(flagged) << flagged.error().message();
  EXPECT_EQ(flagged->out, "cold\n") << flagged->Describe();

  std::string args;
  {
    std::FILE* f = std::fopen(log.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    args.assign(buf, n);
  }
  EXPECT_EQ(args, "exec --pool off " + sandbox.name() + " -- echo first\n" + "run --pool " +
                      socket_ + " --memory 100m -- echo cold\n");
}

TEST_F(PoolServerTest, ANamedSocketWithoutAServerIsAnError) {
  auto run = RunCorral({"run", "--pool", dir_.Join("nobody.sock"), "--", "true"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 125) << run->Describe();
  EXPECT_NE(run->err.find("no pool server at"), std::string::npos) << run->Describe();
}

TEST_F(PoolServerTest, ASecondServerOnTheSameSocketIsRefused) {
  auto second = RunCorral({"pool", "--socket", socket_});
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->exit_code, 125) << second->Describe();
  EXPECT_NE(second->err.find("already serves"), std::string::npos) << second->Describe();
}

TEST_F(PoolServerTest, OtherUsersAreRefusedEvenIfTheSocketIsOpenedUp) {
  // A misconfiguration: the directory and the socket made world-accessible.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(socket_.c_str(), 0666), 0);
  int result[2];
  ASSERT_EQ(::pipe(result), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // nobody: connect, ask, and report the reply through the pipe.
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(2);
    }
    Status st = runtime::WaitForPoolReady(socket_);
    std::string text = st ? "ok" : st.error().message();
    (void)!::write(result[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(result[1]);
  char buf[512] = {};
  ssize_t n = ::read(result[0], buf, sizeof buf - 1);
  ::close(result[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(buf).find("permission denied"), std::string::npos) << buf;
}

// Sends one request (head + 3 fds, then `body`) straight over the protocol and returns the
// first reply frame, parsed.
nlohmann::json RawRequest(const std::string& socket, const std::string& op,
                          const std::string& body) {
  auto connection = runtime::ConnectToPoolSocket(socket);
  EXPECT_TRUE(connection && *connection);
  if (!connection || !*connection) return nullptr;
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const std::string head = nlohmann::json{{"op", op}, {"capture", true}, {"stdin", false}}.dump();
  Status sent = SendFrames((*connection)->get(), {head, body}, {devnull, devnull, devnull});
  ::close(devnull);
  EXPECT_TRUE(sent) << sent.error().message();
  auto reply = ReceiveFrame((*connection)->get());
  EXPECT_TRUE(reply) << (reply ? "" : reply.error().message());
  return reply ? nlohmann::json::parse(*reply, nullptr, false) : nullptr;
}

TEST_F(PoolServerTest, ANulInAnyStringOfARequestFrameIsRefusedBeforeUse) {
  // The store would look the name up as a C string, cut at the NUL: "<name>\0zzz" found
  // and exec'd into <name>.
  PooledSandbox sandbox("pool-nul-" + std::to_string(::getpid()));
  nlohmann::json exec = {{"sandbox", sandbox.name() + std::string("\0zzz", 4)},
                         {"argv", {"true"}},
                         {"env", nlohmann::json::array()},
                         {"workdir", nullptr},
                         {"timeout", nullptr}};
  nlohmann::json reply = RawRequest(socket_, "exec", exec.dump());
  EXPECT_EQ(reply.value("kind", ""), "error") << reply.dump();
  EXPECT_EQ(reply.value("message", ""), "exec request: sandbox: contains a NUL byte")
      << reply.dump();

  nlohmann::json run = {{"default_spec", true}, {"argv", {"echo", std::string("a\0b", 3)}}};
  reply = RawRequest(socket_, "run", run.dump());
  EXPECT_EQ(reply.value("kind", ""), "error") << reply.dump();
  EXPECT_EQ(reply.value("message", ""), "request spec: argv[1]: contains a NUL byte")
      << reply.dump();
}

TEST_F(PoolServerTest, StoppingTheServerRemovesItsSocketAndLeavesNothing) {
  auto run = Pooled({}, {"true"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(StopServer(), 0);
  struct stat st;
  EXPECT_NE(::stat(socket_.c_str(), &st), 0) << "socket left behind";
  // The fixture's leak check covers processes, mounts and cgroups.
}

}  // namespace
}  // namespace corral::test
