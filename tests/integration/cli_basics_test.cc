// What a user of any CLI expects before the first real command: --version, a version
// report with the commit and build options, and a one-line hint (not CLI11's bare text,
// not exit 0) when no subcommand is given. Black-box through the corral binary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/corral_paths.h"

namespace corral::test {
namespace {

TEST(CliBasicsTest, VersionFlagPrintsTheVersionAndCommit) {
  auto r = RunCorral({"--version"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out.rfind("corral ", 0), 0u) << r->Describe();
  EXPECT_NE(r->out.find(" ("), std::string::npos) << r->Describe();
}

TEST(CliBasicsTest, VersionJsonNamesCommitAndBuildOptions) {
  auto r = RunCorral({"version", "--json"});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  auto j = nlohmann::json::parse(r->out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r->Describe();
  for (const char* key : {"version", "commit", "build_type", "compiler"}) {
    ASSERT_TRUE(j.contains(key) && j[key].is_string()) << key << ": " << r->Describe();
    EXPECT_FALSE(j[key].get<std::string>().empty()) << key;
  }
  EXPECT_TRUE(j["sanitize"].is_boolean());
  EXPECT_TRUE(j["static_deps"].is_boolean());
}

TEST(CliBasicsTest, NoSubcommandIsAnErrorWithAHint) {
  auto r = RunCorral({});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("no command given"), std::string::npos) << r->Describe();
  EXPECT_NE(r->err.find("corral --help"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->err.find("A subcommand is required"), std::string::npos) << r->Describe();
}

// CLI11 prints a negated bool flag's default into the help ("--no-peers{false}").
TEST(CliBasicsTest, BenchHelpHasNoDefaultValueArtefacts) {
  auto r = RunCorral({"bench", "--help"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_NE(r->out.find("--no-peers"), std::string::npos) << r->Describe();
  EXPECT_NE(r->out.find("--quick"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->out.find("{false}"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->out.find("{true}"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->out.find("INT:INT"), std::string::npos) << r->Describe();
}

}  // namespace
}  // namespace corral::test
