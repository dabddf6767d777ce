// Embedded NUL bytes over the jail provider and through the CLI front ends (issue 14):
// "ok.txt\0/../../x" must be refused, never read as ok.txt; a write must never create the
// name cut at the NUL. The jail provider is checked both through the tools and through
// the Sandbox interface directly; `corral tool --args` and `corral run --config` are the
// CLI's doors. The local provider's unit tests are tests/unit/nul_refusal_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tools_jail_fixture.h"

namespace corral::test {
namespace {

using nlohmann::json;
using std::string_literals::operator""s;

const std::string kNul = "\0"s;
const std::string kWorkspace = "/mnt/user-data/workspace";

TEST_F(ToolsJailTest, JailToolsRefuseANulInAPath) {
  ASSERT_EQ(Call("write_file", {{"path", kWorkspace + "/ok.txt"}, {"content", "SAFE\n"}}).text,
            "OK");
  const std::string cut = kWorkspace + "/ok.txt" + kNul + "/../../x";
  const std::string refused = "Error: parameter 'path' must not contain a NUL byte";
  EXPECT_EQ(Call("read_file", {{"path", cut}}).text, refused);
  EXPECT_EQ(
      Call("write_file", {{"path", kWorkspace + "/new.txt" + kNul + ".sh"}, {"content", "x"}}).text,
      refused);
  EXPECT_EQ(Call("ls", {{"path", kWorkspace + kNul + "/../../.."}}).text, refused);
  EXPECT_EQ(Call("grep", {{"path", cut}, {"pattern", "SAFE"}}).text, refused);
  EXPECT_EQ(Call("bash", {{"command", "echo a" + kNul + "b"}}).text,
            "Error: parameter 'command' must not contain a NUL byte");
  EXPECT_EQ(Bash("ls " + kWorkspace), "ok.txt\n") << "a truncated name was created";
}

TEST_F(ToolsJailTest, TheJailSandboxRefusesANulBelowTheTools) {
  ASSERT_EQ(Call("write_file", {{"path", kWorkspace + "/ok.txt"}, {"content", "SAFE\n"}}).text,
            "OK");
  auto id = service_->provider().Acquire("t1", "alice");
  ASSERT_TRUE(id) << id.error().message();
  std::shared_ptr<runtime::Sandbox> sb = service_->provider().Get(*id);
  ASSERT_TRUE(sb);
  const std::string cut = kWorkspace + "/ok.txt" + kNul + "/../../x";
  auto read = sb->ReadFile(cut, std::nullopt, std::nullopt);
  ASSERT_FALSE(read) << "read " << *read;
  EXPECT_EQ(read.error().code, runtime::SandboxErrc::kInvalidArgument);
  EXPECT_EQ(read.error().message, "path must not contain a NUL byte");
  auto write = sb->WriteFile(kWorkspace + "/new.txt" + kNul + ".sh", "x", false);
  ASSERT_FALSE(write);
  EXPECT_EQ(write.error().message, "path must not contain a NUL byte");
  auto list = sb->ListDir(kWorkspace + kNul + "/..", 2);
  ASSERT_FALSE(list);
  EXPECT_EQ(list.error().message, "path must not contain a NUL byte");
  auto grep = sb->Grep(cut, "SAFE", {});
  ASSERT_FALSE(grep);
  EXPECT_EQ(grep.error().message, "path must not contain a NUL byte");
  auto exec = sb->ExecuteCommand("true", {{"A" + kNul, "1"}}, 5);
  ASSERT_FALSE(exec);
  EXPECT_EQ(exec.error().message, "env name must not contain a NUL byte");
  service_->provider().Release(*id);
  EXPECT_EQ(Bash("ls " + kWorkspace), "ok.txt\n");
}

class ToolsNulCliTest : public LeakCheckedTest {};

TEST_F(ToolsNulCliTest, CorralToolArgsWithANulAreRefused) {
  TempDir base;
  TempDir runtime;
  RunOptions options;
  options.env = {"CORRAL_RUNTIME_DIR=" + runtime.path()};
  auto tool = [&](const std::string& name, const std::string& args) {
    return RunCorral({"tool", name, "--provider", "local", "--base-dir", base.path(), "--thread",
                      "t1", "--args", args},
                     options);
  };
  auto w = tool("write_file", R"({"path":")" + kWorkspace + R"(/ok.txt","content":"SAFE\n"})");
  ASSERT_TRUE(w && w->exit_code == 0) << (w ? w->Describe() : w.error().message());
  auto r = tool("read_file", R"({"path":")" + kWorkspace + R"(/ok.txt\u0000/../../x"})");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 1) << r->Describe();
  EXPECT_EQ(r->out, "Error: parameter 'path' must not contain a NUL byte") << r->Describe();
  auto c = tool("write_file", R"({"path":")" + kWorkspace + R"(/new.txt\u0000.sh","content":"x"})");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->exit_code, 1) << c->Describe();
  EXPECT_NE(
      ::access((base.path() + "/users/default/threads/t1/user-data/workspace/new.txt").c_str(),
               F_OK),
      0);
}

TEST_F(ToolsNulCliTest, CorralRunRefusesAConfigWithANul) {
  TempDir dir;
  ASSERT_TRUE(dir.WriteFile("c.yaml", "hostname: \"sand\\0box\"\n"));
  auto r = RunCorral({"run", "--config", dir.Join("c.yaml"), "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("hostname: must not contain a NUL byte"), std::string::npos)
      << r->Describe();
}

}  // namespace
}  // namespace corral::test
