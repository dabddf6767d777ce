// JailTest: fixture base of the integration tests that run real jails through the corral
// binary. Root only (skips, or fails under CORRAL_TESTS_MUST_RUN=1); leak-checked (see
// leak_check.h). Header-only because the binary paths come from corral_paths.h.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"
#include "tests/support/run_corral.h"

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

  // Runs `corral run --json ... -- probe <probe_args>` and requires that the command
  // exited 0 and printed one JSON object (fatal failure otherwise, with the whole run).
  void RunProbeOk(const std::vector<std::string>& corral_flags,
                  const std::vector<std::string>& probe_args, JailRun* out,
                  const RunOptions& options = {}) {
    Result<JailRun> run = RunProbe(corral_flags, probe_args, options);
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
};

}  // namespace corral::test
