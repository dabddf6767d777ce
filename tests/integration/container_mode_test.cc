// `mode: container` (runtime/oci) black-box through the corral binary, once per OCI
// runtime (crun, runc): each case runs in process mode and in container mode, and the
// outcome JSON fields that say what happened (status, exit_code, signal, limit, stdout,
// stderr) must be the same, with "runtime" naming the runtime in container mode only.
// Cases: hello world, a non-zero exit, a timeout, an OOM kill, a write to a read-only
// system directory, uid/gid 1000 without capabilities, an empty network, the seccomp
// profile, `corral code run` (scanner and import guard in the jail). After each case no
// container of ours is left in the runtime's list, no bundle, no cgroup; also after a
// timeout and after SIGTERM to corral. Root only; leak-checked. Under
// CORRAL_TESTS_MUST_RUN=1 a missing runtime fails instead of skipping.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "runtime/oci/container_run.h"
#include "runtime/oci/oci_runtime.h"
#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"

namespace corral::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Names of containers the runtime lists that look like corral's ("corral-<pid>-<n>").
std::set<std::string> CorralContainers(const std::string& runtime_path) {
  std::set<std::string> out;
  auto r = RunProgram(runtime_path, {"list", "-q"});
  if (!r) return out;
  std::string line;
  for (char c : r->out + "\n") {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line.rfind("corral-", 0) == 0) out.insert(line);
    line.clear();
  }
  return out;
}

std::set<std::string> Bundles() {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/run/corral/oci", ec)) out.insert(e.path());
  return out;
}

// Every cgroup directory named corral-<pid>-<n> under any hierarchy's corral/ parent.
std::set<std::string> ContainerCgroups() {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    std::error_code ec2;
    for (const auto& e : fs::directory_iterator(h.path() / "corral", ec2)) {
      if (e.path().filename().string().rfind("corral-", 0) == 0) out.insert(e.path());
    }
  }
  return out;
}

class ContainerModeTest : public LeakCheckedTest,
                          public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    CORRAL_REQUIRE_ROOT();
    auto rt = runtime::oci::FindOciRuntime(GetParam());
    if (!rt) CORRAL_SKIP_OR_FAIL(GetParam() + " is not installed: " + rt.error().message());
    runtime_path_ = rt->path;
    containers_before_ = CorralContainers(runtime_path_);
    bundles_before_ = Bundles();
    cgroups_before_ = ContainerCgroups();
  }

  void TearDown() override {
    if (runtime_path_.empty()) return;
    EXPECT_EQ(CorralContainers(runtime_path_), containers_before_)
        << GetParam() << " still lists a container of corral's";
    EXPECT_EQ(Bundles(), bundles_before_) << "a bundle directory was left in /run/corral/oci";
    EXPECT_EQ(ContainerCgroups(), cgroups_before_) << "a container cgroup was left";
  }

  std::vector<std::string> ContainerFlags() const {
    return {"--mode", "container", "--oci-runtime", GetParam()};
  }

  // corral <command...> --json [mode flags] <flags...> -- <argv...>; the JSON (null if none).
  json Run(bool container, const std::vector<std::string>& flags,
           const std::vector<std::string>& argv) {
    std::vector<std::string> args = {"run", "--json", "--pool", "off"};
    if (container) {
      auto c = ContainerFlags();
      args.insert(args.end(), c.begin(), c.end());
    }
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), argv.begin(), argv.end());
    return Parse(RunCorral(args));
  }

  json Parse(const Result<RunResult>& r) {
    if (!r) {
      ADD_FAILURE() << r.error().message();
      return nullptr;
    }
    last_ = r->Describe();
    json j = json::parse(r->out, nullptr, false);
    if (!j.is_object()) {
      ADD_FAILURE() << "no JSON outcome:\n" << last_;
      return nullptr;
    }
    return j;
  }

  // Runs argv in both modes; expects the fields that say what happened to agree and returns
  // the container mode's outcome.
  json Both(const std::vector<std::string>& flags, const std::vector<std::string>& argv,
            bool compare_output = true) {
    json process = Run(false, flags, argv);
    std::string process_run = last_;
    json container = Run(true, flags, argv);
    if (process.is_null() || container.is_null()) return container;
    std::vector<const char*> fields = {"status", "exit_code", "limit", "signal"};
    if (compare_output) {
      fields.push_back("stdout");
      fields.push_back("stderr");
    }
    for (const char* f : fields) {
      EXPECT_EQ(container[f], process[f]) << f << " differs\nprocess mode:\n"
                                          << process_run << "\ncontainer mode:\n"
                                          << last_;
    }
    EXPECT_FALSE(process.contains("runtime")) << process_run;
    EXPECT_EQ(container["runtime"], GetParam()) << last_;
    return container;
  }

  std::string runtime_path_;
  std::set<std::string> containers_before_, bundles_before_, cgroups_before_;
  std::string last_;
};

TEST_P(ContainerModeTest, HelloWorld) {
  json r = Both({}, {"/bin/echo", "hello"});
  EXPECT_EQ(r["status"], "exited") << last_;
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_EQ(r["stdout"], "hello\n");
}

TEST_P(ContainerModeTest, NonZeroExit) {
  json r = Both({}, {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r["status"], "exited") << last_;
  EXPECT_EQ(r["exit_code"], 3);
  EXPECT_EQ(r["stdout"], "out\n");
  EXPECT_EQ(r["stderr"], "err\n");
}

TEST_P(ContainerModeTest, Timeout) {
  // corral-init is the container's PID 1, so the command dies of the timeout's SIGTERM (15)
  // as in process mode, not of the SIGKILL after the grace.
  json r = Both({"--timeout", "1"}, {"/bin/sh", "-c", "echo start; exec sleep 30"});
  EXPECT_EQ(r["signal"], 15) << last_;
  EXPECT_EQ(r["status"], "timed_out") << last_;
  EXPECT_EQ(r["exit_code"], 124);
  EXPECT_EQ(r["limit"], "wall_time");
  EXPECT_EQ(r["stdout"], "start\n");
  EXPECT_LT(r["wall_ms"].get<double>(), 10000) << last_;
}

TEST_P(ContainerModeTest, TimeoutReachesEveryProcessOfTheCommand) {
  // The SIGTERM goes to every process, as process mode's does: the shell's child traps it
  // and says so; the shell traps it too, to wait for the child (else the command would end
  // first, and the rest of the namespace with it, before the child's trap ran). The child
  // sends its own stderr away: its sleep gets the same SIGTERM, and whether the child then
  // reports "Terminated" depends on which of the two the kernel signals first, so the
  // stderr the two modes are compared on would be a coin toss. The outer shell's is kept.
  json r = Both({"--timeout", "1"}, {"/bin/sh", "-c",
                                     "trap wait TERM; sh -c 'exec 2>/dev/null; "
                                     "trap \"echo child got TERM; exit 0\" TERM; "
                                     "echo ready; while :; do sleep 0.05; done' & wait"});
  EXPECT_EQ(r["status"], "timed_out") << last_;
  EXPECT_EQ(r["stdout"], "ready\nchild got TERM\n") << last_;
}

TEST_P(ContainerModeTest, MissingCommandIsAFailedExec) {
  json r = Both({}, {"/no/such/command"});
  EXPECT_EQ(r["status"], "setup_failed") << last_;
  EXPECT_EQ(r["exit_code"], 127) << last_;
}

TEST_P(ContainerModeTest, OutOfMemory) {
  json r = Both({"--memory", "64m"},
                {"/usr/bin/python3", "-c", "b = bytearray(512 << 20); print(len(b))"});
  EXPECT_EQ(r["status"], "oom_killed") << last_;
  EXPECT_EQ(r["exit_code"], 137);
  EXPECT_EQ(r["limit"], "memory");
}

TEST_P(ContainerModeTest, SystemDirectoriesAreReadOnly) {
  json r = Both({}, {"/bin/sh", "-c",
                     "for d in /usr /etc /bin/ /lib/ /; do touch $d/corral-x 2>/dev/null && "
                     "echo wrote $d; done; touch /tmp/ok && echo tmp ok"});
  EXPECT_EQ(r["stdout"], "tmp ok\n") << last_;
}

TEST_P(ContainerModeTest, SandboxUserWithoutCapabilities) {
  json r = Both({}, {"/bin/sh", "-c",
                     "id -u; id -g; id -G; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|"
                     "NoNewPrivs|Seccomp):' /proc/self/status; hostname"});
  EXPECT_EQ(r["stdout"],
            "1000\n1000\n1000\nCapInh:\t0000000000000000\n"
            "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
            "CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n"
            "NoNewPrivs:\t1\nSeccomp:\t2\nsandbox\n")
      << last_;
}

TEST_P(ContainerModeTest, NetworkIsEmpty) {
  // Interfaces of the network namespace: loopback only, and nothing reachable.
  json r = Both({}, {"/bin/sh", "-c",
                     "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
                     "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\" "
                     "2>/dev/null || echo unreachable"});
  EXPECT_EQ(r["stdout"], "lo\nunreachable\n") << last_;
}

TEST_P(ContainerModeTest, SeccompProfileApplies) {
  // keyctl is not in corral's default profile (the keyring is not namespaced): EPERM.
  // Without the profile the session keyring's id would come back.
  json r = Both({}, {"/usr/bin/python3", "-c",
                     "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
                     "rc = libc.syscall(250, 0, -3, 0); "
                     "print(rc, os.strerror(ctypes.get_errno()) if rc < 0 else '')"});
  EXPECT_EQ(r["stdout"], "-1 Operation not permitted\n") << last_;
}

TEST_P(ContainerModeTest, CodeRunInContainer) {
  std::vector<std::string> args = {"code", "run", "--json"};
  auto c = ContainerFlags();
  args.insert(args.end(), c.begin(), c.end());
  std::vector<std::string> hello = args;
  hello.insert(hello.end(), {"-c", "import os\nprint('hello', os.getuid())"});
  json r = Parse(RunCorral(hello));
  EXPECT_EQ(r["status"], "ok") << last_;
  EXPECT_EQ(r["stdout"], "hello 1000\n") << last_;
  EXPECT_EQ(r["stderr"], "") << last_;
  EXPECT_EQ(r["runtime"], GetParam()) << last_;
  EXPECT_EQ(r["outcome"]["runtime"], GetParam()) << last_;

  // The scanner runs in the container: a refused call is found at its line, nothing runs.
  std::vector<std::string> refused = args;
  refused.insert(refused.end(), {"-c", "print('ran')\nimport os\nos.system('true')"});
  r = Parse(RunCorral(refused));
  EXPECT_EQ(r["status"], "refused") << last_;
  EXPECT_EQ(r["stdout"], "") << last_;
  ASSERT_EQ(r["findings"].size(), 1u) << last_;
  EXPECT_EQ(r["findings"][0]["line"], 3) << last_;

  // And so does the import guard.
  std::vector<std::string> guarded = args;
  guarded.insert(guarded.end(), {"-c", "import json\nimport socket\n"});
  ASSERT_TRUE(fs::exists(SourceDir()));
  std::vector<std::string> with_list = guarded;
  const std::string config = "/tmp/corral-container-test-" + std::to_string(::getpid()) + ".yaml";
  {
    FILE* f = std::fopen(config.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("python:\n  allowlist: [json]\n", f);
    std::fclose(f);
  }
  with_list.insert(with_list.begin() + 3, {"--config", config});
  r = Parse(RunCorral(with_list));
  ::unlink(config.c_str());
  EXPECT_EQ(r["status"], "error") << last_;
  EXPECT_NE(r["stderr"].get<std::string>().find("module 'socket' is not allowed"),
            std::string::npos)
      << last_;
}

TEST_P(ContainerModeTest, SigtermToCorralCleansUp) {
  std::vector<std::string> args = {CorralBinary(), "run", "--json"};
  auto c = ContainerFlags();
  args.insert(args.end(), c.begin(), c.end());
  args.insert(args.end(), {"--", "/bin/sleep", "60"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  RecordSpawnedPid(pid);
  ::close(out[1]);
  // Until the container is running (its cgroup exists), then SIGTERM to corral.
  const std::string cg = "/sys/fs/cgroup/pids/corral/corral-" + std::to_string(pid) + "-0";
  for (int i = 0; i < 100 && !fs::exists(cg); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(fs::exists(cg)) << "the container never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, n);
  ::close(out[0]);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << text;
  json j = json::parse(text, nullptr, false);
  ASSERT_TRUE(j.is_object()) << text;
  EXPECT_EQ(j["interrupted_by"], SIGTERM) << text;
  EXPECT_FALSE(fs::exists(cg));
}

TEST_P(ContainerModeTest, UnknownRuntimePathIsAClearError) {
  auto r = RunCorral(
      {"run", "--mode", "container", "--oci-runtime", "/nonexistent/crun", "--", "/bin/true"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("oci_runtime /nonexistent/crun"), std::string::npos) << r->Describe();
}

INSTANTIATE_TEST_SUITE_P(Runtimes, ContainerModeTest, ::testing::Values("crun", "runc"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace corral::test
