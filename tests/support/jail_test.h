// JailTest: fixture base of the integration tests that run real jails through the corral
// binary. Root only (skips, or fails under CORRAL_TESTS_MUST_RUN=1); leak-checked (see
// leak_check.h). Header-only because the binary paths come from corral_paths.h.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/files.h"
#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"
#include "tests/support/run_corral.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_user.h"

namespace corral::test {

class JailTest : public LeakCheckedTest {
 protected:
  void SetUp() override {
    RequireRoot();
    if (IsSkipped() || HasFatalFailure()) return;
    struct stat st;
    ASSERT_EQ(stat(CorralBinary().c_str(), &st), 0) << "corral binary missing: " << CorralBinary();
    ASSERT_EQ(stat(ProbeBinary().c_str(), &st), 0) << "probe missing: " << ProbeBinary();
  }

  // Rootless variant: from now on every run of RunProbeAsCaller/RunProbeOk/Report goes
  // through setpriv as the unprivileged test user (tests/support/test_user.h), with a
  // runtime directory of its own as XDG_RUNTIME_DIR, and a config with
  // unsafe.allow_missing_limits: true (these runs check isolation; what an unprivileged
  // user gets for limits is tested in run_rootless_test.cc).
  void UseTestUser() {
    auto user = EnsureTestUser();
    ASSERT_TRUE(user) << user.error().message();
    test_user_ = *user;
    user_dir_ = std::make_unique<TempDir>();
    ASSERT_EQ(::chown(user_dir_->path().c_str(), user->uid, user->gid), 0);
    ASSERT_TRUE(user_dir_->MakeDirs("runtime", 0700));
    ASSERT_EQ(::chown(user_dir_->Join("runtime").c_str(), user->uid, user->gid), 0);
    ASSERT_TRUE(user_dir_->WriteFile("limits.yaml", "unsafe:\n  allow_missing_limits: true\n"));
  }
  bool as_test_user() const { return user_dir_ != nullptr; }
  const TestUser& test_user() const { return test_user_; }
  // A directory for the test user (TempDir is 0700 and root's): chowned to it.
  void GiveToTestUser(const TempDir& dir) {
    if (!as_test_user()) return;
    ASSERT_EQ(::chown(dir.path().c_str(), test_user_.uid, test_user_.gid), 0);
  }

  // `corral <args>` (args[0] is the subcommand) as this test's caller: root, or the test
  // user once UseTestUser() was called.
  // As the test user, runs warn on stderr that limits are skipped; under a pty that is
  // the command's output too, so those lines (and only those) are taken out of `out`.
  Result<RunResult> RunCorralAsCaller(std::vector<std::string> args, RunOptions options = {}) {
    if (!as_test_user()) return RunCorral(args, options);
    AsCaller(&args, &options);
    Result<RunResult> run = RunProgram(kSetprivBinary, args, options);
    if (run && options.use_pty) run->out = StripCorralWarnings(run->out);
    return run;
  }
  Result<JailRun> RunJailedAsCaller(std::vector<std::string> args, RunOptions options = {}) {
    if (!as_test_user()) return RunJailed(CorralBinary(), args, options);
    ASSIGN_OR_RETURN(RunResult run, RunCorralAsCaller(std::move(args), std::move(options)));
    return ParseJailed(std::move(run));
  }
  Result<JailRun> RunProbeAsCaller(const std::vector<std::string>& corral_flags,
                                   const std::vector<std::string>& probe_args,
                                   const RunOptions& options = {}) {
    return RunJailedAsCaller(ProbeRunArgs(ProbeBinary(), corral_flags, probe_args), options);
  }

  // Runs `corral run --json ... -- probe <probe_args>` and requires that the command
  // exited 0 and printed one JSON object (fatal failure otherwise, with the whole run).
  void RunProbeOk(const std::vector<std::string>& corral_flags,
                  const std::vector<std::string>& probe_args, JailRun* out,
                  const RunOptions& options = {}) {
    Result<JailRun> run = RunProbeAsCaller(corral_flags, probe_args, options);
    ASSERT_TRUE(run) << run.error().message();
    *out = std::move(*run);
    ASSERT_EQ(out->outcome.value("status", nlohmann::json()), "exited") << out->Describe();
    ASSERT_EQ(out->outcome.value("exit_code", nlohmann::json()), 0) << out->Describe();
    ASSERT_EQ(out->run.exit_code, 0) << out->Describe();
    ASSERT_TRUE(out->probe.is_object()) << "probe printed no JSON\n" << out->Describe();
  }

  // RunProbeOk for `report` with `corral_flags`.
  void Report(const std::vector<std::string>& corral_flags, nlohmann::json* report,
              const RunOptions& options = {}) {
    JailRun run;
    ASSERT_NO_FATAL_FAILURE(RunProbeOk(corral_flags, {"report"}, &run, options));
    *report = run.probe;
  }

 private:
  void AsCaller(std::vector<std::string>* args, RunOptions* options) const {
    if (!args->empty())
      args->insert(args->begin() + 1, {"--config", user_dir_->Join("limits.yaml")});
    *args = AsTestUser(test_user_, CorralBinary(), *args);
    options->env.push_back("XDG_RUNTIME_DIR=" + user_dir_->Join("runtime"));
  }

  TestUser test_user_;
  std::unique_ptr<TempDir> user_dir_;
};

}  // namespace corral::test
