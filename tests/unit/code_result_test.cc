// runtime/code/code_result.cc: the runner's header line is trusted only as the very first
// line of stderr and with the run's nonce; status and exit code follow from it and the
// outcome (a limit's kill wins over a refusal).
#include "runtime/code/code_result.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace corral::runtime::code {
namespace {

const std::string kFindings =
    R"("findings": [{"line": 3, "col": 1, "name": "os.system", "key": "python.scan.deny_calls",)"
    R"( "message": "os.system is denied"}])";

std::string Header(const std::string& nonce, bool refused) {
  return "\x1e"
         "corral-code {\"nonce\": \"" +
         nonce + "\", " + kFindings + ", \"refused\": " + (refused ? "true" : "false") +
         ", \"scan_ms\": 1.5}\n";
}

RunOutcome Exited(int code, const std::string& err) {
  RunOutcome o;
  o.captured = true;
  o.exit_code = code;
  o.stderr_stream.text = err;
  return o;
}

TEST(CodeResult, RefusedWithTheRightNonce) {
  CodeResult r = InterpretOutcome(Exited(86, Header("n1", true)), "n1", "deny");
  EXPECT_EQ(r.status, "refused");
  EXPECT_EQ(r.exit_code, kRefusedExitCode);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].line, 3);
  EXPECT_EQ(r.findings[0].name, "os.system");
  EXPECT_EQ(r.findings[0].key, "python.scan.deny_calls");
  // Why, in stderr too (the Python module and the daemon show stderr).
  EXPECT_EQ(r.outcome.stderr_stream.text,
            "corral: refused: line 3: os.system is denied\n"
            "corral: the code was not run (change the keys named above, or set python.scan.mode: "
            "warn to run it anyway)\n");
  ASSERT_TRUE(r.scan_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.scan_ms, 1.5);
  EXPECT_EQ(FindingLine(r.findings[0]), "line 3: os.system is denied");
}

TEST(CodeResult, WarnModeKeepsTheCodesStderrAndStatus) {
  CodeResult r = InterpretOutcome(Exited(0, Header("n1", false) + "warning: x\n"), "n1", "warn");
  EXPECT_EQ(r.status, "ok");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.outcome.stderr_stream.text, "warning: x\n");
  nlohmann::json j = nlohmann::json::parse(CodeResultToJson(r));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["scan_mode"], "warn");
  EXPECT_EQ(j["findings"][0]["line"], 3);
  EXPECT_FALSE(j["outcome"].contains("stderr")) << "stderr is given once, at the top";
}

TEST(CodeResult, AHeaderWithAnotherNonceOrNotFirstIsTheCodesOwnOutput) {
  const std::string forged = Header("guess", true);
  CodeResult r = InterpretOutcome(Exited(86, forged), "n1", "deny");
  EXPECT_EQ(r.status, "error");
  EXPECT_EQ(r.exit_code, 86);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.outcome.stderr_stream.text, forged);

  const std::string later = "x\n" + Header("n1", true);
  CodeResult second = InterpretOutcome(Exited(86, later), "n1", "deny");
  EXPECT_EQ(second.status, "error");
  EXPECT_EQ(second.outcome.stderr_stream.text, later);
}

TEST(CodeResult, LimitsAndSignalsGiveTheirStatus) {
  RunOutcome timed = Exited(0, Header("n1", false));
  timed.status = RunStatus::kTimedOut;
  timed.limit = LimitKind::kWallTime;
  EXPECT_EQ(InterpretOutcome(timed, "n1", "deny").status, "timeout");
  EXPECT_EQ(InterpretOutcome(timed, "n1", "deny").exit_code, 124);
  RunOutcome oom = Exited(0, "");
  oom.status = RunStatus::kOomKilled;
  oom.signal = 9;
  oom.limit = LimitKind::kMemory;
  EXPECT_EQ(InterpretOutcome(oom, "n1", "deny").status, "oom");
  EXPECT_EQ(InterpretOutcome(oom, "n1", "deny").exit_code, 137);
  RunOutcome killed = Exited(0, Header("n1", true));
  killed.status = RunStatus::kSignaled;
  killed.signal = 15;
  EXPECT_EQ(InterpretOutcome(killed, "n1", "deny").status, "killed")
      << "a refusal counts only when the runner exited by itself";
}

}  // namespace
}  // namespace corral::runtime::code
