// The command lines the `corral` front program serves itself, and the one it hands to the
// full CLI after the pool declined: anything outside the plainest form must go to the full
// CLI, which parses and reports it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/front/fast_path.h"
#include "cli/front/text.h"

namespace corral::cli::front {
namespace {

using Args = std::vector<std::string>;

// The parser takes argv as the kernel hands it over (cli/front is freestanding); these
// tests speak vectors of strings.
struct Parsed {
  FastKind kind;
  std::string pool;
  bool pass_stdin;
  std::string sandbox;
  Args command;
};

std::vector<char*> Argv(const Args& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

std::optional<Parsed> ParseFastPath(const Args& args) {
  std::vector<char*> argv = Argv(args);
  FastRequest r;
  if (!front::ParseFastPath(static_cast<int>(args.size()), argv.data(), &r)) return std::nullopt;
  Parsed out{r.kind, r.pool, r.pass_stdin, r.sandbox ? r.sandbox : "", {}};
  for (char* const* c = r.command; *c != nullptr; ++c) out.command.emplace_back(*c);
  return out;
}

Args WithPoolOff(const Args& args) {
  std::vector<char*> argv = Argv(args);
  std::vector<char*> out(args.size() + 3);
  front::WithPoolOff(static_cast<int>(args.size()), argv.data(), out.data());
  Args result;
  for (char* const* a = out.data(); *a != nullptr; ++a) result.emplace_back(*a);
  return result;
}

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
           {"corral", "run", "--"},                            // no command
           {"corral", "run", "true"},                          // no "--"
           {"corral", "run", "--json", "--", "true"},          // output the full CLI renders
           {"corral", "run", "--memory", "1g", "--", "true"},  // a spec option
           {"corral", "run", "--pool", "off", "--", "true"},   // cold by request
           {"corral", "run", "--pool=off", "--", "true"},
           {"corral", "run", "--pool", "--", "true"},  // "--" taken as the value
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
  EXPECT_EQ(WithPoolOff(
                {"corral", "exec", "-i", "--pool", "/s", "box", "--pool=/t", "--", "--pool", "x"}),
            (Args{"corral", "exec", "--pool", "off", "-i", "box", "--", "--pool", "x"}));
}

// ---- the front program's text: what it sends and what it reads back -----------------

TEST(FrontTextTest, JsonStringsAreEscapedAsTheServerParsesThem) {
  corral::front::Buffer b;
  b.AppendJsonString("a\"b\\c\n\x01 d é");
  std::string text(b.data(), b.size());
  EXPECT_EQ(text, "\"a\\\"b\\\\c\\u000a\\u0001 d é\"");
  EXPECT_EQ(nlohmann::json::parse(text).get<std::string>(), "a\"b\\c\n\x01 d é");
  corral::front::Buffer n;
  n.AppendInt(-125);
  n.AppendInt(0);
  n.AppendInt(137);
  EXPECT_EQ(std::string(n.data(), n.size()), "-1250137");
}

TEST(FrontTextTest, FieldsAreReadFromTheTopLevelOnly) {
  nlohmann::json reply = {{"kind", "outcome"},
                          {"exit_code", 137},
                          {"nested", {{"kind", "decoy"}}},
                          {"report", "corral: warning: \"x\"\n\ttab \u00e9 \\ end\n"}};
  std::string text = reply.dump();
  corral::front::Buffer kind, report, missing;
  long code = 0;
  EXPECT_TRUE(corral::front::JsonStringField(text.data(), text.size(), "kind", &kind));
  EXPECT_EQ(std::string(kind.data(), kind.size()), "outcome");
  EXPECT_TRUE(corral::front::JsonIntField(text.data(), text.size(), "exit_code", &code));
  EXPECT_EQ(code, 137);
  EXPECT_TRUE(corral::front::JsonStringField(text.data(), text.size(), "report", &report));
  EXPECT_EQ(std::string(report.data(), report.size()), reply["report"].get<std::string>());
  EXPECT_FALSE(corral::front::JsonStringField(text.data(), text.size(), "absent", &missing));
  EXPECT_FALSE(corral::front::JsonIntField(text.data(), text.size(), "kind", &code));
  std::string cut = text.substr(0, text.size() / 2);  // a frame cut short
  corral::front::Buffer partial;
  EXPECT_FALSE(corral::front::JsonStringField(cut.data(), cut.size(), "report", &partial));
}

}  // namespace
}  // namespace corral::cli::front
