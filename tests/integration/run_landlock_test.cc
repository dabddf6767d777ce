// Landlock as a second filesystem fence, black-box through the corral binary: a mount the
// mount table makes writable (or readable) but that is left out of the Landlock rules
// (landlock.omit, a test fixture) is refused with EACCES when Landlock is on and reached
// when it is off; ordinary workloads still work under it; TCP is fenced in allowlist mode
// (left alone on network none's own loopback) and opened by landlock.tcp: false; persistent
// sandboxes' execs and pooled jails get the same rules. Root only; leak-checked. This host has
// Landlock ABI >= 4 (CORRAL_TESTS_MUST_RUN turns a missing one into a failure).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "base/files.h"
#include "runtime/pool/pool_client.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

constexpr char kFence[] = "/srv/fence";  // the omitted mount, outside any granted tree

// Connects to 127.0.0.1:9 (no listener) and says how it failed: EACCES is Landlock's.
constexpr char kConnectPort9[] =
    "out=$( (exec 3<>/dev/tcp/127.0.0.1/9) 2>&1 ); case \"$out\" in "
    "*'Permission denied'*) echo connect-eacces;; *'Connection refused'*) echo connect-refused;; "
    "*) echo \"other: $out\";; esac\n";

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

int KernelLandlockAbi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

class LandlockTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (KernelLandlockAbi() < 4) {
      CORRAL_SKIP_OR_FAIL("the kernel's Landlock ABI is below 4 (TCP rules)");
    }
    // A directory anyone may write, mounted read-write but omitted from the rules.
    ASSERT_TRUE(fence_.WriteFile("present", "readable\n", 0644));
    ASSERT_TRUE(fence_.WriteFile("tool.sh", "#!/bin/sh\necho ran\n", 0755));
    ASSERT_EQ(::chmod(fence_.path().c_str(), 0777), 0);
    config_ = config_dir_.Join("landlock.yaml");
    ASSERT_TRUE(config_dir_.WriteFile("landlock.yaml",
                                      "mounts:\n  - {host_path: " + fence_.path() +
                                          ", container_path: " + kFence +
                                          ", read_only: false}\n"
                                          "landlock: {omit: [" +
                                          kFence + "]}\n",
                                      0644));
  }

  // `corral <verb> --json --config <fence config> <flags> -- bash -c <script>`.
  Result<JailRun> Bash(const std::vector<std::string>& flags, const std::string& script,
                       const std::string& verb = "run") {
    std::vector<std::string> args = {verb, "--json", "--config", config_};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "bash", "-c", script});
    return RunJailed(CorralBinary(), args);
  }

  // `corral pool --size 1 --socket <socket> <flags>`, started and answering.
  void StartPool(const std::string& socket, const std::vector<std::string>& flags, pid_t* pid) {
    std::vector<std::string> argv = {CorralBinary(), "pool", "--size", "1", "--socket", socket};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto server = StartProgram(argv);
    ASSERT_TRUE(server) << server.error().message();
    *pid = *server;
    Status ready = Error(ErrorCode::kNotFound, "no socket");
    for (int i = 0; i < 500 && !ready; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (PathExists(socket)) ready = runtime::WaitForPoolReady(socket);
    }
    ASSERT_TRUE(ready) << ready.error().message();
  }

  TempDir fence_;
  TempDir config_dir_;
  std::string config_;
};

TEST_F(LandlockTest, WriteToAnOmittedReadWriteMountIsRefusedOnlyWithLandlock) {
  const std::string write = std::string("echo new > ") + kFence + "/written";
  auto on = Bash({}, write);
  ASSERT_TRUE(on) << on.error().message();
  EXPECT_EQ(on->outcome["exit_code"], 1) << on->Describe();
  EXPECT_NE(on->outcome["stderr"].get<std::string>().find("Permission denied"), std::string::npos)
      << on->Describe();
  EXPECT_EQ(on->outcome["landlock"]["enforced"], true) << on->Describe();
  EXPECT_EQ(on->outcome["landlock"]["abi"], KernelLandlockAbi()) << on->Describe();
  // The diagnosis: Landlock named, and how to confirm.
  const std::string hint = on->outcome["landlock"].value("hint", "");
  EXPECT_NE(hint.find("--landlock off"), std::string::npos) << on->Describe();
  EXPECT_FALSE(PathExists(fence_.Join("written")));

  auto off = Bash({"--landlock", "off"}, write);
  ASSERT_TRUE(off) << off.error().message();
  EXPECT_EQ(off->outcome["exit_code"], 0) << off->Describe();
  EXPECT_EQ(off->outcome["landlock"]["enforced"], false) << off->Describe();
  auto written = ReadFile(fence_.Join("written"));
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_EQ(*written, "new\n");
}

TEST_F(LandlockTest, TheHintIsGivenOnlyForARefusalUnderLandlock) {
  // A plain failure, and a read-only mount's EROFS, are not Landlock's: no hint.
  for (const std::string& script : {std::string("exit 3"), std::string("touch /usr/x")}) {
    auto run = Bash({}, script);
    ASSERT_TRUE(run) << run.error().message();
    EXPECT_NE(run->outcome["exit_code"], 0) << run->Describe();
    EXPECT_EQ(run->outcome["landlock"]["enforced"], true) << run->Describe();
    EXPECT_FALSE(run->outcome["landlock"].contains("hint")) << run->Describe();
  }
  // Without --json the output is streamed: the caller sees the refusal itself.
  auto run = RunCorral(
      {"run", "--config", config_, "--", "bash", "-c", std::string("touch ") + kFence + "/x"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_NE(run->exit_code, 0) << run->Describe();
  EXPECT_NE(run->err.find("Permission denied"), std::string::npos) << run->Describe();
}

// Listing a directory stays allowed everywhere (the root's rule lets `ls /` and `ls /mnt`
// work, and Landlock rules cover all that lies beneath): names, not contents.
TEST_F(LandlockTest, ReadsAndExecsOfAnOmittedMountAreRefused) {
  const std::string script = std::string("cat ") + kFence + "/present; ls " + kFence + "; " +
                             kFence + "/tool.sh; echo done";
  auto on = Bash({}, script);
  ASSERT_TRUE(on) << on.error().message();
  const std::string out = on->outcome["stdout"];
  const std::string err = on->outcome["stderr"];
  EXPECT_EQ(out, "present\ntool.sh\ndone\n") << on->Describe();
  // cat and the exec refused.
  size_t denials = 0;
  for (size_t at = err.find("Permission denied"); at != std::string::npos;
       at = err.find("Permission denied", at + 1)) {
    ++denials;
  }
  EXPECT_EQ(denials, 2u) << on->Describe();

  auto off = Bash({"--landlock", "off"}, script);
  ASSERT_TRUE(off) << off.error().message();
  EXPECT_EQ(off->outcome["stdout"], "readable\npresent\ntool.sh\nran\ndone\n") << off->Describe();
}

TEST_F(LandlockTest, OrdinaryWorkloadsRunUnderLandlock) {
  TempDir data;
  ASSERT_EQ(::chmod(data.path().c_str(), 0755), 0);  // the sandbox user may enter it
  const std::string script =
      "set -e\n"
      "echo a > /tmp/a && mv /tmp/a /tmp/b && mkdir /tmp/d && mv /tmp/b /tmp/d/c\n"  // refer
      "truncate -s 0 /tmp/d/c && ln -s /tmp/d/c /tmp/link && mkfifo /tmp/fifo\n"
      "printf '#!/bin/sh\\necho script-ran\\n' > /tmp/s.sh && chmod +x /tmp/s.sh && /tmp/s.sh\n"
      "echo h > $HOME/h && rm $HOME/h\n"
      "echo w > /mnt/user-data/workspace/w && cat /mnt/user-data/workspace/w\n"
      "echo shm > /dev/shm/x && rm /dev/shm/x\n"
      "echo gone > /dev/null && head -c 4 /dev/urandom | wc -c && head -c 2 /dev/zero | wc -c\n"
      "ls / > /dev/null && ls /proc/self/fd > /dev/null && cat /proc/self/status > /dev/null\n"
      "echo 500 > /proc/self/oom_score_adj\n"
      "python3 -c 'import os, json, subprocess; print(subprocess.run([\"echo\", \"py\"], "
      "capture_output=True, text=True).stdout.strip())'\n"
      "rm -r /tmp/d /tmp/link /tmp/fifo /tmp/s.sh\n"
      "echo ok\n";
  auto run = Bash({"--user-data", data.path()}, script);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["landlock"]["enforced"], true) << run->Describe();
  EXPECT_EQ(run->outcome["exit_code"], 0) << run->Describe();
  EXPECT_EQ(run->outcome["stdout"], "script-ran\nw\n4\n2\npy\nok\n") << run->Describe();
}

TEST_F(LandlockTest, ATerminalWorksUnderLandlock) {
  RunOptions pty;
  pty.use_pty = true;
  // The jail's own pty (-t): opening /dev/pts/ptmx, its ioctls (stty), /dev/tty.
  auto run = RunCorral({"run", "-t", "--config", config_, "--", "bash", "-c",
                        "stty size > /dev/null && tty && echo hi > /dev/tty && echo tty-ok"},
                       pty);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 0) << run->Describe();
  EXPECT_NE(run->out.find("/dev/pts/"), std::string::npos) << run->Describe();
  EXPECT_NE(run->out.find("tty-ok"), std::string::npos) << run->Describe();
}

TEST_F(LandlockTest, ALocalhostServerAndItsClientWorkWithTheDefaultNetwork) {
  // network none (the default): the jail's own loopback is all it has, and Landlock leaves
  // TCP there alone, so a dev server and the curl that tests it work as written.
  const std::string serve =
      "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 8123)); "
      "s.listen(); print(\"listening\", flush=True); c, _ = s.accept(); c.sendall(b\"pong\\n\")' "
      "& for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8123 && cat <&3) 2>/dev/null && "
      "break; sleep 0.1; done; wait\n" +
      std::string(kConnectPort9);
  auto run = Bash({}, serve);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["landlock"]["enforced"], true) << run->Describe();
  EXPECT_EQ(run->outcome["landlock"]["tcp"], false) << run->Describe();
  // Port 9 has no listener: the kernel's answer, not Landlock's.
  EXPECT_EQ(run->outcome["stdout"], "listening\npong\nconnect-refused\n") << run->Describe();
}

TEST_F(LandlockTest, AllowListModeReachesTheProxyPortOnlyUnlessTcpIsOff) {
  // The proxy listens on 127.0.0.1:3128 in the jail's namespace; port 9 is nobody's.
  const std::vector<std::string> allowlist = {"--network", "allowlist", "--allow",
                                              "example.invalid"};
  const std::string script =
      "(exec 3<>/dev/tcp/127.0.0.1/3128) && echo proxy-reached\n" + std::string(kConnectPort9);
  auto run = Bash(allowlist, script);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["landlock"]["tcp"], true) << run->Describe();
  EXPECT_EQ(run->outcome["stdout"], "proxy-reached\nconnect-eacces\n") << run->Describe();

  // landlock.tcp: false leaves the namespace as the only fence: port 9 meets no listener.
  std::vector<std::string> no_tcp_flags = allowlist;
  no_tcp_flags.insert(no_tcp_flags.end(), {"--landlock-tcp", "off"});
  auto no_tcp = Bash(no_tcp_flags, kConnectPort9);
  ASSERT_TRUE(no_tcp) << no_tcp.error().message();
  EXPECT_EQ(no_tcp->outcome["landlock"]["tcp"], false) << no_tcp->Describe();
  EXPECT_EQ(no_tcp->outcome["stdout"], "connect-refused\n") << no_tcp->Describe();
}

TEST_F(LandlockTest, OnRunsHereAndCheckReportsWhatWouldBeEnforced) {
  auto run = Bash({"--landlock", "on"}, "true");
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["exit_code"], 0) << run->Describe();
  EXPECT_EQ(run->outcome["landlock"]["enforced"], true) << run->Describe();

  auto bad = RunCorral({"run", "--landlock", "sometimes", "--", "true"});
  ASSERT_TRUE(bad) << bad.error().message();
  EXPECT_EQ(bad->exit_code, 125) << bad->Describe();
  EXPECT_NE(bad->err.find("--landlock sometimes: expected auto, on or off"), std::string::npos)
      << bad->Describe();

  auto check = RunCorral({"check"});
  ASSERT_TRUE(check) << check.error().message();
  EXPECT_NE(check->out.find("landlock ABI " + std::to_string(KernelLandlockAbi())),
            std::string::npos)
      << check->Describe();
  EXPECT_NE(check->out.find("Landlock ABI " + std::to_string(KernelLandlockAbi()) +
                            ": writes only beneath the jail's read-write mounts"),
            std::string::npos)
      << check->Describe();
}

// A persistent sandbox's execs (cold, and through a pool's exec slot) get the create's rules.
TEST_F(LandlockTest, ExecsIntoAPersistentSandboxGetTheSameRules) {
  const std::string name = "landlock-test-" + std::to_string(::getpid());
  auto created = RunCorral({"create", "--name", name, "--config", config_});
  ASSERT_TRUE(created && created->exit_code == 0) << (created ? created->Describe() : "");
  const std::string write = std::string("echo x > ") + kFence + "/from-exec; echo x > /tmp/ok";
  auto exec = RunJailed(CorralBinary(), {"exec", "--json", name, "--", "bash", "-c", write});
  ASSERT_TRUE(exec) << exec.error().message();
  EXPECT_EQ(exec->outcome["landlock"]["enforced"], true) << exec->Describe();
  EXPECT_NE(exec->outcome["stderr"].get<std::string>().find("Permission denied"), std::string::npos)
      << exec->Describe();
  EXPECT_FALSE(PathExists(fence_.Join("from-exec")));
  // The init (corral-init, exec'd under the init's Landlock) is alive: the exec ran.
  auto alive = RunJailed(CorralBinary(), {"exec", "--json", name, "--", "cat", "/proc/1/comm"});
  ASSERT_TRUE(alive) << alive.error().message();
  EXPECT_EQ(alive->outcome["stdout"], "corral-init\n") << alive->Describe();

  // Through a pool's exec slot (prepared after the first exec it serves).
  TempDir sock_dir;
  const std::string socket = sock_dir.Join("pool.sock");
  pid_t server = -1;
  ASSERT_NO_FATAL_FAILURE(StartPool(socket, {}, &server));
  bool pooled = false;
  for (int i = 0; i < 50 && !pooled; ++i) {
    auto slot = RunJailed(CorralBinary(),
                          {"exec", "--json", "--pool", socket, name, "--", "bash", "-c", write});
    ASSERT_TRUE(slot) << slot.error().message();
    pooled = slot->outcome.value("pooled", false);
    EXPECT_EQ(slot->outcome["landlock"]["enforced"], true) << slot->Describe();
    EXPECT_NE(slot->outcome["stderr"].get<std::string>().find("Permission denied"),
              std::string::npos)
        << slot->Describe();
    if (!pooled) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(pooled) << "no exec was served by an exec slot";
  EXPECT_FALSE(PathExists(fence_.Join("from-exec")));
  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);
  auto removed = RunCorral({"rm", name});
  EXPECT_TRUE(removed && removed->exit_code == 0);
}

// A pool's prepared jails (built before their command) get the same rules as a cold run.
TEST_F(LandlockTest, PooledJailsGetTheSameRules) {
  TempDir sock_dir;
  const std::string socket = sock_dir.Join("pool.sock");
  pid_t server = -1;
  ASSERT_NO_FATAL_FAILURE(StartPool(socket, {"--config", config_}, &server));
  auto run = Bash({"--pool", socket}, std::string("echo x > ") + kFence + "/pooled");
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome.value("pooled", false), true) << run->Describe();
  EXPECT_EQ(run->outcome["landlock"]["enforced"], true) << run->Describe();
  EXPECT_NE(run->outcome["stderr"].get<std::string>().find("Permission denied"), std::string::npos)
      << run->Describe();
  EXPECT_FALSE(PathExists(fence_.Join("pooled")));
  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);
}

}  // namespace
}  // namespace corral::test
