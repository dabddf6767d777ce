// How `corral run` reports failures and exit statuses, black-box: setup errors name their
// step and errno, exit codes follow docker run (125 setup/config, 126 not executable,
// 127 not found, 128+N signal N, else the command's status). Root only; leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

using nlohmann::json;

class ErrorsTest : public JailTest {
 protected:
  // A probe run that is expected not to exit 0.
  void RunProbeAny(const std::vector<std::string>& flags, const std::vector<std::string>& args,
                   JailRun* out) {
    Result<JailRun> run = RunProbe(flags, args);
    ASSERT_TRUE(run) << run.error().message();
    *out = std::move(*run);
  }

  // Checks a setup failure: status, step, errno, exit code of corral and in the outcome.
  static void ExpectSetupError(const JailRun& run, const std::string& step, const std::string& err,
                               int exit_code) {
    EXPECT_EQ(run.outcome["status"], "setup_failed") << run.Describe();
    ASSERT_TRUE(run.outcome["setup_error"].is_object()) << run.Describe();
    EXPECT_EQ(run.outcome["setup_error"]["step"], step) << run.Describe();
    EXPECT_EQ(run.outcome["setup_error"]["errno"], err) << run.Describe();
    EXPECT_TRUE(run.outcome["setup_error"]["message"].is_string()) << run.Describe();
    EXPECT_EQ(run.outcome["exit_code"], exit_code) << run.Describe();
    EXPECT_EQ(run.run.exit_code, exit_code) << run.Describe();
  }
};

// A missing working directory that cannot be made (inside the read-only /usr; one that no
// mount holds, such as /nonexistent, gets a tmpfs of its own: run_mounts_test.cc).
TEST_F(ErrorsTest, MissingWorkdirFailsAtChdirWith125) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeAny({"-w", "/usr/nonexistent"}, {"report"}, &run));
  ExpectSetupError(run, "chdir", "ENOENT", 125);
  EXPECT_NE(run.outcome["setup_error"]["message"].get<std::string>().find("/usr/nonexistent"),
            std::string::npos)
      << "the message should name the directory: " << run.Describe();
  EXPECT_TRUE(run.probe.is_null()) << "the command ran anyway: " << run.Describe();
}

TEST_F(ErrorsTest, MissingCommandIs127) {
  for (const char* command : {"/nonexistent/cmd", "no-such-command-in-path"}) {
    Result<JailRun> run = RunJailed(CorralBinary(), {"run", "--json", "--", command});
    ASSERT_TRUE(run) << run.error().message();
    ExpectSetupError(*run, "execve", "ENOENT", 127);
  }
}

TEST_F(ErrorsTest, NonExecutableIs126) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  ASSERT_TRUE(dir.WriteFile("script.sh", "#!/bin/sh\necho should not run\n", 0644));
  ASSERT_TRUE(dir.MakeDirs("subdir"));
  for (const char* command : {"/opt/files/script.sh", "/opt/files/subdir"}) {
    Result<JailRun> run = RunJailed(
        CorralBinary(), {"run", "--json", "-v", dir.path() + ":/opt/files:ro", "--", command});
    ASSERT_TRUE(run) << run.error().message();
    ExpectSetupError(*run, "execve", "EACCES", 126);
  }
}

TEST_F(ErrorsTest, ExitStatusPropagates) {
  for (int code : {0, 3, 42, 255}) {
    JailRun run;
    ASSERT_NO_FATAL_FAILURE(RunProbeAny({}, {"exit", std::to_string(code)}, &run));
    EXPECT_EQ(run.outcome["status"], "exited") << run.Describe();
    EXPECT_EQ(run.outcome["exit_code"], code) << run.Describe();
    EXPECT_EQ(run.outcome["signal"], nullptr) << run.Describe();
    EXPECT_EQ(run.outcome["setup_error"], nullptr) << run.Describe();
    EXPECT_EQ(run.run.exit_code, code) << run.Describe();
  }
}

TEST_F(ErrorsTest, DeathBySignalIs128PlusN) {
  // The probe is PID 2 in the jail (IsolationTest checks it), so it signals itself.
  for (int sig : {9, 15}) {
    JailRun run;
    ASSERT_NO_FATAL_FAILURE(RunProbeAny({}, {"kill", "2", std::to_string(sig)}, &run));
    EXPECT_EQ(run.outcome["status"], "signaled") << run.Describe();
    EXPECT_EQ(run.outcome["signal"], sig) << run.Describe();
    EXPECT_EQ(run.run.exit_code, 128 + sig) << run.Describe();
  }
}

// Without --json the command's output is not captured: the probe's JSON is corral's stdout.
TEST_F(ErrorsTest, PlainModePassesOutputAndExitStatusThrough) {
  std::vector<std::string> args = ProbeRunArgs(ProbeBinary(), {}, {"report"});
  args.erase(args.begin() + 1);  // drop --json
  Result<RunResult> run = RunCorral(args);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 0) << run->Describe();
  json report = json::parse(run->out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << run->Describe();
  EXPECT_EQ(report["command"], "report");
  EXPECT_EQ(report["uid"], 1000);

  args = ProbeRunArgs(ProbeBinary(), {}, {"exit", "3"});
  args.erase(args.begin() + 1);
  run = RunCorral(args);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 3) << run->Describe();
}

// Everything after `--` is the command, whatever options precede the `--` (repeatable
// ones such as -v and -e included) and whatever the command's arguments look like.
TEST_F(ErrorsTest, ArgumentsAfterDoubleDashBelongToTheCommand) {
  Result<JailRun> run = RunJailed(
      CorralBinary(), {"run", "--json", "-e", "GREETING=hi", "--", "sh", "-c", "echo $GREETING"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["stdout"], "hi\n") << run->Describe();
  run = RunJailed(CorralBinary(), {"run", "--json", "-v", ProbeBinary() + ":/opt/p:ro", "--",
                                   "/opt/p", "--version", "-x"});
  ASSERT_TRUE(run) << run.error().message();
  // The probe rejects the unknown command "--version" with its usage error (exit 2).
  EXPECT_EQ(run->outcome["exit_code"], 2) << run->Describe();
}

struct BadInput {
  std::vector<std::string> flags;
  const char* names;  // what the error message must mention
};

// Invalid input stops before any jail exists (exit 125) and names the field at fault.
TEST_F(ErrorsTest, InvalidInputIs125AndNamesTheField) {
  TempDir user_data;
  ASSERT_EQ(chmod(user_data.path().c_str(), 0755), 0);
  const BadInput kCases[] = {
      {{"--user", "0"}, "allow_root"},
      {{"--user", "abc"}, "--user"},
      // The flag as given, not the spec key (mounts[1], after the probe's mount).
      {{"-v", "rel/ative:/x"},
       "-v rel/ative:/x: 'rel/ative' is no volume name (must be 1 to 64 letters"},
      {{"-v", "/tmp:relative"}, "-v /tmp:relative: container path must be an absolute path"},
      {{"--memory", "lots"}, "--memory"},
      {{"--cpus", "-1"}, "cpus"},
      {{"--rootfs", "/nonexistent"}, "rootfs"},
      {{"--skills", "/nonexistent"}, "skills"},
      {{"--seccomp", "/nonexistent.json"}, "seccomp"},
      {{"--seccomp", "unconfined"}, "allow_unconfined_seccomp"},
      // (-e NAME alone is valid: the caller's value; cli_docker_habits_test.cc)
      {{"-e", "1BAD"}, "-e 1BAD: NAME must match"},
      {{"-e", "1BAD=x"}, "-e 1BAD=x: "},
      {{"--hostname", "bad/host"}, "hostname"},
  };
  for (const BadInput& c : kCases) {
    std::vector<std::string> flags = c.flags;
    flags.insert(flags.end(), {"--user-data", user_data.path()});
    std::vector<std::string> args =
        ProbeRunArgs(ProbeBinary(), flags, {"write", "/mnt/user-data/workspace/ran"});
    args.erase(args.begin() + 1);  // plain mode: the error goes to stderr
    Result<RunResult> run = RunCorral(args);
    ASSERT_TRUE(run) << run.error().message();
    EXPECT_EQ(run->exit_code, 125) << run->Describe();
    EXPECT_NE(run->err.find(c.names), std::string::npos) << "error should name " << c.names << "\n"
                                                         << run->Describe();
    EXPECT_NE(access(user_data.Join("workspace/ran").c_str(), F_OK), 0)
        << "the command ran despite invalid input\n"
        << run->Describe();
  }
}

}  // namespace
}  // namespace corral::test
