// grep's matcher and work bounds (issue 14, finding 2): RE2 is linear in the line, so
// patterns that send a backtracking engine (std::regex) exponential or deep into
// recursion finish; the accepted syntax is RE2's (Python re minus backreferences and
// lookaround) with a clean "Invalid regex pattern" for the rest; each call stops at its
// byte and wall-time bounds with a notice. Behaviour is asserted, not time: a hang or a
// stack overflow fails the test run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/temp_dir.h"
#include "tools/providers/local_sandbox.h"
#include "tools/providers/sandbox_search.h"
#include "tools/tools.h"

namespace corral {
namespace {

using nlohmann::json;
using runtime::LineMatcher;

bool Matches(const std::string& pattern, const std::string& line, bool case_sensitive = true) {
  auto m = LineMatcher::Create(pattern, false, case_sensitive);
  EXPECT_TRUE(m) << pattern << ": " << m.error().message;
  return m && m->Matches(line);
}

std::string CompileError(const std::string& pattern) {
  auto m = LineMatcher::Create(pattern, false, true);
  EXPECT_FALSE(m) << pattern << " compiled";
  if (m) return "";
  EXPECT_EQ(m.error().code, runtime::SandboxErrc::kInvalidRegex);
  return m.error().message;
}

TEST(GrepMatcher, PathologicalPatternsFinishWithTheRightAnswer) {
  // Exponential for a backtracking engine at a few dozen characters; these lines are at
  // the longest grep matches (kGrepMaxLineChars).
  const std::string as(runtime::kGrepMaxLineChars - 1, 'a');
  EXPECT_FALSE(Matches("(a+)+$", as + "!"));
  EXPECT_FALSE(Matches("(a|aa)+$", as + "!"));
  EXPECT_FALSE(Matches("(a*)*b", as));
  EXPECT_FALSE(Matches("^(a|a?)+$", as + "!"));
  EXPECT_FALSE(Matches("(x+x+)+y", std::string(runtime::kGrepMaxLineChars, 'x')));
  EXPECT_TRUE(Matches("(a+)+$", as));
  EXPECT_TRUE(Matches("(.*a){20}", as));
  EXPECT_FALSE(Matches("(.*a){20}!", as));
}

TEST(GrepMatcher, VeryLongInputsDoNotRecurse) {
  // libstdc++'s std::regex recurses once per character here and overflows the stack.
  const std::string long_line(4 * 1024 * 1024, 'a');
  EXPECT_FALSE(Matches("(a|b)*c", long_line));
  EXPECT_TRUE(Matches("(a|b)*$", long_line));
  EXPECT_FALSE(Matches("(a+)+$", long_line + "!"));
}

TEST(GrepMatcher, PythonReSyntaxThatRe2SharesIsAccepted) {
  EXPECT_TRUE(Matches(R"((?P<word>\w+)=(\d+))", "x = 1; key=42"));
  EXPECT_TRUE(Matches(R"((?i)todo\b)", "# TODO: fix"));
  EXPECT_TRUE(Matches(R"(^\s*def\s+\w+\(.*?\):$)", "  def f(a, b):"));
  EXPECT_TRUE(Matches(R"(\Aimport (os|sys)\z)", "import sys"));
  EXPECT_TRUE(Matches(R"([A-Z]{2,3}\d)", "id AB7"));
  EXPECT_TRUE(Matches(R"((?:ab)+c)", "xababc"));
  EXPECT_FALSE(Matches(R"(^a.c$)", "a\nc"));
  // Case-insensitive matching folds Unicode case, not just ASCII.
  EXPECT_TRUE(Matches("ÉTÉ", "un été chaud", false));
  EXPECT_FALSE(Matches("ÉTÉ", "un été chaud", true));
}

TEST(GrepMatcher, WhatRe2RefusesGetsACleanErrorWithTheSyntaxHint) {
  const std::string hint = "(grep uses RE2 syntax: Python re without backreferences";
  EXPECT_EQ(CompileError("foo(?=bar)").find("invalid perl operator: (?="), 0u);
  EXPECT_NE(CompileError("foo(?=bar)").find(hint), std::string::npos);
  EXPECT_NE(CompileError("(?<!x)y").find(hint), std::string::npos);
  EXPECT_EQ(CompileError(R"((a)\1)").find(R"(invalid escape sequence: \1)"), 0u);
  EXPECT_NE(CompileError(R"((a)\1)").find(hint), std::string::npos);
  EXPECT_EQ(CompileError("(unclosed").find("missing ): (unclosed"), 0u);
  EXPECT_EQ(CompileError("a{2,1}").find("invalid repetition size: {2,1}"), 0u);
  EXPECT_EQ(CompileError("a++").find("bad repetition operator: ++"), 0u);  // possessive
  EXPECT_NE(CompileError("a++").find(hint), std::string::npos);
  EXPECT_NE(CompileError("(?>a)").find(hint), std::string::npos);  // atomic group
  EXPECT_EQ(CompileError(R"(end\Z)").find(R"(invalid escape sequence: \Z)"), 0u);
}

TEST(GrepMatcher, LiteralModeMatchesThePatternAsText) {
  auto lit = LineMatcher::Create("(a+)+$", true, true);
  ASSERT_TRUE(lit);
  EXPECT_TRUE(lit->Matches("x (a+)+$ y"));
  EXPECT_FALSE(lit->Matches("aaaa"));
  auto ci = LineMatcher::Create("Été", true, false);
  ASSERT_TRUE(ci);
  EXPECT_TRUE(ci->Matches("UN ÉTÉ"));
}

class GrepToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.MakeDirs("workspace"));
    sandbox_ = std::make_unique<runtime::LocalSandbox>(
        "local:t", std::vector<runtime::LocalMapping>{{"/mnt/user-data", dir_.path(), false}},
        false);
  }
  tools::ToolOutput Grep(const json& args, const tools::ToolSettings& s = {}) {
    return tools::RunTool(*sandbox_, "grep", args, s);
  }
  test::TempDir dir_;
  std::unique_ptr<runtime::LocalSandbox> sandbox_;
};

TEST_F(GrepToolTest, APathologicalPatternOverManyLongLinesReturnsPromptly) {
  std::string content;
  for (int i = 0; i < 200; ++i) content += std::string(1999, 'a') + "!\n";
  content += "aaa\n";
  ASSERT_TRUE(dir_.WriteFile("workspace/evil.txt", content));
  auto out = Grep({{"path", "/mnt/user-data/workspace"}, {"pattern", "(a+)+$"}});
  EXPECT_TRUE(out.ok) << out.text;
  EXPECT_EQ(
      out.text,
      "Found 1 matches under /mnt/user-data/workspace\n/mnt/user-data/workspace/evil.txt:201: aaa");
}

TEST_F(GrepToolTest, InvalidPatternsKeepDeerFlowsMessage) {
  auto out = Grep({{"path", "/mnt/user-data/workspace"}, {"pattern", "a(?=b)"}});
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.text.find("Error: Invalid regex pattern: invalid perl operator: (?="), 0u)
      << out.text;
}

TEST_F(GrepToolTest, TheByteBoundStopsTheSearchWithANotice) {
  ASSERT_TRUE(dir_.WriteFile("workspace/a.txt", "hit one\n"));  // 8 bytes
  ASSERT_TRUE(dir_.WriteFile("workspace/b.txt", "hit two\n"));  // 8 more: over a 12-byte budget
  tools::ToolSettings s;
  s.grep_max_bytes_scanned = 12;
  auto out = Grep({{"path", "/mnt/user-data/workspace"}, {"pattern", "hit"}}, s);
  EXPECT_TRUE(out.ok);
  EXPECT_EQ(out.limit, "grep_max_bytes_scanned");
  EXPECT_EQ(out.text,
            "Found 1 matches under /mnt/user-data/workspace\n/mnt/user-data/workspace/a.txt:1: hit "
            "one\n\n"
            "Search stopped early: the grep_max_bytes_scanned limit (12 bytes read per call) was "
            "reached; files not yet searched were skipped, so matches may be missing. Narrow the "
            "path or add a glob filter.");
  s.grep_max_bytes_scanned = 16;  // both files fit: no notice
  out = Grep({{"path", "/mnt/user-data/workspace"}, {"pattern", "hit"}}, s);
  EXPECT_EQ(out.limit, std::nullopt) << out.text;
  EXPECT_EQ(out.text.find("Found 2 matches"), 0u) << out.text;
}

TEST_F(GrepToolTest, TheWallTimeBoundStopsTheSearchWithANotice) {
  ASSERT_TRUE(dir_.WriteFile("workspace/a.txt", "hit one\n"));
  tools::ToolSettings s;
  s.grep_max_seconds = 0;  // spent before the first file
  auto out = Grep({{"path", "/mnt/user-data/workspace"}, {"pattern", "hit"}}, s);
  EXPECT_TRUE(out.ok);
  EXPECT_EQ(out.limit, "grep_max_seconds");
  EXPECT_EQ(out.text,
            "No matches found under /mnt/user-data/workspace\n\nSearch stopped early: the "
            "grep_max_seconds limit (0 seconds per call) was reached; files not yet searched were "
            "skipped, so matches may be missing. Narrow the path or add a glob filter.");
}

TEST_F(GrepToolTest, TheMatchBoundStillTruncates) {
  std::string many;
  for (int i = 0; i < 20; ++i) many += "hit\n";
  ASSERT_TRUE(dir_.WriteFile("workspace/a.txt", many));
  auto out = Grep({{"path", "/mnt/user-data/workspace"}, {"pattern", "hit"}, {"max_results", 5}});
  EXPECT_EQ(out.limit, "grep_max_results");
  EXPECT_EQ(out.text.find("Found 5 matches under /mnt/user-data/workspace (showing first 5)"), 0u);
}

}  // namespace
}  // namespace corral
