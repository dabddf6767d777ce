// The command lines the `corral` front program serves itself, and the one it hands to the
// full CLI after the pool declined: anything outside the plainest form must go to the full
// CLI, which parses and reports it.
#include "cli/front/fast_path.h"

#include <gtest/gtest.h>

namespace corral::cli::front {
namespace {

using Args = std::vector<std::string>;

TEST(FrontFastPathTest, PlainRunWithPoolAndStdinOptions) {
  auto r = ParseFastPath({"corral", "run", "--", "sh", "-c", "echo hi"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, FastKind::kRun);
  EXPECT_EQ(r->pool, "auto");
  EXPECT_FALSE(r->pass_stdin);
  EXPECT_EQ(r->command, (Args{"sh", "-c", "echo hi"}));

  r = ParseFastPath({"corral", "run", "-i", "--pool", "/tmp/p.sock", "--", "cat"});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->pass_stdin);
  EXPECT_EQ(r->pool, "/tmp/p.sock");
  r = ParseFastPath({"corral", "run", "--pool=/tmp/q.sock", "--stdin", "--", "cat"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pool, "/tmp/q.sock");
  EXPECT_TRUE(r->pass_stdin);
}

TEST(FrontFastPathTest, TheCommandIsVerbatimAfterTheFirstDoubleDash) {
  auto r = ParseFastPath({"corral", "run", "--", "--json", "--", "-i"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->command, (Args{"--json", "--", "-i"}));
  EXPECT_FALSE(r->pass_stdin);
}

TEST(FrontFastPathTest, PlainExecNeedsExactlyOneSandboxName) {
  auto r = ParseFastPath({"corral", "exec", "box", "-i", "--", "true"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, FastKind::kExec);
  EXPECT_EQ(r->sandbox, "box");
  EXPECT_TRUE(r->pass_stdin);
  EXPECT_FALSE(ParseFastPath({"corral", "exec", "--", "true"}));
  EXPECT_FALSE(ParseFastPath({"corral", "exec", "a", "b", "--", "true"}));
  EXPECT_FALSE(ParseFastPath({"corral", "run", "box", "--", "true"}));
}

TEST(FrontFastPathTest, EverythingElseGoesToTheFullCli) {
  for (const Args& args : std::vector<Args>{
           {"corral"},
           {"corral", "--help"},
           {"corral", "ps"},
           {"corral", "run"},
           {"corral", "run", "--"},                              // no command
           {"corral", "run", "true"},                            // no "--"
           {"corral", "run", "--json", "--", "true"},            // output the full CLI renders
           {"corral", "run", "--memory", "1g", "--", "true"},    // a spec option
           {"corral", "run", "--pool", "off", "--", "true"},     // cold by request
           {"corral", "run", "--pool=off", "--", "true"},
           {"corral", "run", "--pool", "--", "true"},            // "--" taken as the value
           {"corral", "run", "--pool"},
           {"corral", "run", "--pool=", "--", "true"},
           {"corral", "run", "-ie", "--", "true"},
           {"corral", "exec", "-e", "A=1", "box", "--", "true"},
           {"corral", "exec", "--timeout", "1", "box", "--", "true"},
           {"corral", "exec", "-w", "/tmp", "box", "--", "true"},
       }) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_FALSE(ParseFastPath(args)) << line;
  }
}

TEST(FrontFastPathTest, WithPoolOffReplacesEveryPoolOptionBeforeTheCommand) {
  EXPECT_EQ(WithPoolOff({"corral", "run", "--", "x"}),
            (Args{"corral", "run", "--pool", "off", "--", "x"}));
  EXPECT_EQ(WithPoolOff({"corral", "exec", "-i", "--pool", "/s", "box", "--pool=/t", "--", "--pool",
                         "x"}),
            (Args{"corral", "exec", "--pool", "off", "-i", "box", "--", "--pool", "x"}));
}

}  // namespace
}  // namespace corral::cli::front
