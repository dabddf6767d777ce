// The process-sandbox design's config file, in its own shape (runtime/spec/config_design.h),
// used as is by `corral run --config`, `corral code run --config`, the Python module's
// `SandboxExecutor(config="my_sandbox.yaml")` and `corral config explain`: its 16-process
// limit, timeout and CPU time, env, a read-only mount, its root as the work directory,
// network off, the import allow-list. Root only (real jails); leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/files.h"
#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

using nlohmann::json;

class DesignConfigTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(dir_.MakeDirs("root"));
    ASSERT_TRUE(dir_.MakeDirs("data"));
    ASSERT_TRUE(dir_.WriteFile("data/hello.txt", "hello from the host\n"));
    config_ = WriteConfig("my_sandbox.yaml", "30", "10");
  }

  // The design's file, as the design prints it, with a real root and mount.
  std::string WriteConfig(const std::string& name, const std::string& timeout,
                          const std::string& cpu_seconds) {
    const std::string yaml =
        "sandbox:\n"
        "  mode: process\n"
        "  timeout: " +
        timeout +
        "\n"
        "  limits: {memory_mb: 256, cpu_seconds: " +
        cpu_seconds +
        ", max_processes: 16}\n"
        "  filesystem: {root: " +
        dir_.Join("root") + ", mounts: [{host: " + dir_.Join("data") +
        ", guest: /data, readonly: true}]}\n"
        "  network: {enabled: false, allow_domains: []}\n"
        "  python: {version: \"3\", allowlist: [math, json]}\n"
        "  env: {OMP_NUM_THREADS: 2}\n";
    EXPECT_TRUE(dir_.WriteFile(name, yaml));
    return dir_.Join(name);
  }

  json CodeRun(const std::string& code, std::string* describe) {
    auto r = RunCorral({"code", "run", "--config", config_, "--json", "-c", code});
    if (!r) {
      ADD_FAILURE() << r.error().message();
      return nullptr;
    }
    *describe = r->Describe();
    json j = json::parse(r->out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << *describe;
    return j;
  }

  TempDir dir_;
  std::string config_;
};

TEST_F(DesignConfigTest, RunHasTheSixteenProcessLimit) {
  Result<JailRun> run = RunProbe({"--config", config_}, {"forkbomb", "100000", "60"});
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
  EXPECT_EQ(run->outcome["limit"], "pids") << run->Describe();
  ASSERT_TRUE(run->probe.is_object()) << run->Describe();
  // 16 tasks in the jail's cgroup: corral's init, the probe, and fewer than 15 children.
  EXPECT_LT(run->probe["forked"].get<int64_t>(), 15) << run->Describe();
  EXPECT_GE(run->probe["forked"].get<int64_t>(), 5) << run->Describe();
}

TEST_F(DesignConfigTest, RunHasTheTimeoutAndTheCpuTime) {
  // The same file with a shorter timeout (30 s would make a slow test of the same thing).
  Result<JailRun> run =
      RunProbe({"--config", WriteConfig("short.yaml", "1", "10")}, {"spin", "60"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "timed_out") << run->Describe();
  EXPECT_EQ(run->outcome["limit"], "wall_time") << run->Describe();
  EXPECT_EQ(run->run.exit_code, 124) << run->Describe();
  run = RunProbe({"--config", WriteConfig("cpu.yaml", "30", "1")}, {"spin", "60"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["limit"], "cpu_time") << run->Describe();
}

TEST_F(DesignConfigTest, RunSeesEnvMountRootAndNoNetwork) {
  const std::string script =
      "echo env=$OMP_NUM_THREADS; cat /data/hello.txt; echo pwd=$(pwd);"
      "touch /data/new 2>&1 | sed 's/.*: //';"
      "echo written > result.txt;"
      "echo links=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ');"
      "python3 -c 'import socket\n"
      "try:\n    socket.create_connection((\"1.1.1.1\", 80), timeout=5); print(\"connected\")\n"
      "except OSError as e:\n    print(\"connect failed:\", e)'";
  auto r = RunCorral({"run", "--config", config_, "--json", "--", "/bin/sh", "-c", script});
  ASSERT_TRUE(r) << r.error().message();
  json outcome = json::parse(r->out, nullptr, false);
  ASSERT_TRUE(outcome.is_object()) << r->Describe();
  const std::string out = outcome["stdout"];
  EXPECT_NE(out.find("env=2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("hello from the host\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Read-only file system\n"), std::string::npos) << out;
  EXPECT_NE(out.find("pwd=/mnt/user-data/workspace\n"), std::string::npos) << out;
  EXPECT_NE(out.find("links=lo\n"), std::string::npos) << out;
  // ENETUNREACH (only lo), or EACCES where Landlock fences TCP too: never connected.
  EXPECT_NE(out.find("connect failed:"), std::string::npos) << out;
  // filesystem.root is the sandbox's work directory: what the code wrote is on the host.
  auto written = ReadFile(dir_.Join("root/workspace/result.txt"));
  ASSERT_TRUE(written) << written.error().message() << "\n" << out;
  EXPECT_EQ(*written, "written\n");
  struct stat st;
  EXPECT_NE(::stat(dir_.Join("data/new").c_str(), &st), 0) << "the read-only mount was written";
}

TEST_F(DesignConfigTest, CodeRunAppliesTheFile) {
  std::string describe;
  json r = CodeRun(
      "import json, math\n"
      "print(json.dumps({'sqrt': math.sqrt(16), 'data': open('/data/hello.txt').read()}))\n"
      "try:\n"
      "    open('/data/new.txt', 'w')\n"
      "except OSError as e:\n"
      "    print('write errno', e.errno)\n",
      &describe);
  EXPECT_EQ(r["status"], "ok") << describe;
  EXPECT_EQ(r["stdout"], "{\"sqrt\": 4.0, \"data\": \"hello from the host\\n\"}\nwrite errno 30\n")
      << describe;
  // python.allowlist: [math, json]
  r = CodeRun("import os\n", &describe);
  EXPECT_EQ(r["status"], "error") << describe;
  EXPECT_NE(r["stderr"].get<std::string>().find("module 'os' is not allowed (python.allowlist)"),
            std::string::npos)
      << describe;
}

// The design's example with only its import line changed, run where the file is.
TEST_F(DesignConfigTest, PythonExecutorTakesTheFile) {
  ASSERT_TRUE(dir_.WriteFile("client.py", R"PY(
import json, os, sys
os.chdir(sys.argv[1])
code = "import math\nprint(math.factorial(5))\n"

from corral import SandboxExecutor

executor = SandboxExecutor(config="my_sandbox.yaml")
result = executor.run(code)
print(json.dumps({"stdout": result.stdout, "exit_code": result.exit_code,
                  "status": result.status}))
)PY"));
  RunOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  options.env = {"PYTHONPATH=" + SourceDir() + "/python", "CORRAL_BINARY=" + CorralBinary()};
  auto r = RunProgram("/usr/bin/python3", {dir_.Join("client.py"), dir_.path()}, options);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  json j = json::parse(r->out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r->Describe();
  EXPECT_EQ(j["stdout"], "120\n") << r->Describe();
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["status"], "ok");
}

TEST_F(DesignConfigTest, ExplainPrintsCorralsKeysThatRunTheSame) {
  auto explained = RunCorral({"config", "explain", config_});
  ASSERT_TRUE(explained) << explained.error().message();
  ASSERT_EQ(explained->exit_code, 0) << explained->Describe();
  const std::string& yaml = explained->out;
  EXPECT_NE(yaml.find("limits:\n  memory: 256m\n  pids: 16\n  timeout: 30\n  cpu_time: 10\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("user_data_dir: " + dir_.Join("root") + "\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("env:\n  OMP_NUM_THREADS: 2\n"), std::string::npos) << yaml;
  ASSERT_TRUE(dir_.WriteFile("corral_form.yaml", yaml));
  auto json_form = RunCorral({"config", "explain", "--json", config_});
  ASSERT_TRUE(json_form);
  EXPECT_EQ(json::parse(json_form->out, nullptr, false)["limits"]["pids"], 16)
      << json_form->Describe();
  // The corral form runs with the same limit.
  Result<JailRun> run =
      RunProbe({"--config", dir_.Join("corral_form.yaml")}, {"forkbomb", "100000", "60"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["limit"], "pids") << run->Describe();
  EXPECT_LT(run->probe["forked"].get<int64_t>(), 15) << run->Describe();
  // A bad file: the loader's error with the design's field path, corral's exit code.
  ASSERT_TRUE(dir_.WriteFile("bad.yaml", "sandbox:\n  limits: {memory_mb: 0}\n"));
  auto bad = RunCorral({"config", "explain", dir_.Join("bad.yaml")});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->exit_code, 125) << bad->Describe();
  EXPECT_NE(bad->err.find("bad.yaml:2: sandbox.limits.memory_mb: must be a positive integer, "
                          "got \"0\""),
            std::string::npos)
      << bad->Describe();
  auto refused = RunCorral({"run", "--config", dir_.Join("bad.yaml"), "--", "/bin/true"});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->exit_code, 125) << refused->Describe();
  EXPECT_NE(refused->err.find("sandbox.limits.memory_mb: must be a positive integer"),
            std::string::npos)
      << refused->Describe();
}

// The design's `mode: container` reaches the OCI runner (runtime/oci): the outcome names the
// runtime that ran it.
TEST_F(DesignConfigTest, ContainerModeRunsThroughAnOciRuntime) {
  ASSERT_TRUE(dir_.WriteFile("container.yaml", "sandbox:\n  mode: container\n"));
  auto r = RunCorral({"run", "--json", "--config", dir_.Join("container.yaml"), "--", "/bin/true"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  nlohmann::json outcome = nlohmann::json::parse(r->out, nullptr, false);
  ASSERT_TRUE(outcome.is_object()) << r->Describe();
  EXPECT_EQ(outcome["status"], "exited") << r->Describe();
  std::string runtime = outcome.value("runtime", "");
  EXPECT_TRUE(runtime == "crun" || runtime == "runc") << r->Describe();
}

}  // namespace
}  // namespace corral::test
