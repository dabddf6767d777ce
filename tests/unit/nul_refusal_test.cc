// Embedded NUL bytes (issue 14, finding 1): a string the kernel reads as a C string would be
// validated whole and used cut at the NUL. Each layer refuses it before any other check:
// the Sandbox interface (every provider; the local one here, the jail one in
// tests/integration/tools_nul_test.cc), the tool arguments, JSON documents
// (base/json_nul.h), the spec JSON, the spec validation and the provider config YAML.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>

#include "base/files.h"
#include "base/json_nul.h"
#include "runtime/spec/config.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/spec_json.h"
#include "tests/support/temp_dir.h"
#include "tools/tool_service.h"

namespace corral {
namespace {

using nlohmann::json;
using std::string_literals::operator""s;

const std::string kNul = "\0"s;

class LocalNulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.use = runtime::ProviderKind::kLocal;
    config_.base_dir = dir_.Join("base");
    config_.allow_host_bash = true;
    config_.audit_log.path = dir_.Join("audit.jsonl");
    auto s = tools::ToolService::FromConfig(config_, runtime::JailSpec{});
    ASSERT_TRUE(s) << s.error().message();
    service_ = std::move(*s);
    ASSERT_EQ(Call("write_file", {{"path", kWs + "/ok.txt"}, {"content", "SAFE\n"}}).text, "OK");
  }
  tools::ToolOutput Call(const std::string& tool, const json& args) {
    return service_->Call("u1", "t1", tool, args);
  }
  // The thread's sandbox itself, below the tool layer.
  std::shared_ptr<runtime::Sandbox> Sandbox() {
    auto id = service_->provider().Acquire("t1", "u1");
    EXPECT_TRUE(id) << id.error().message();
    return id ? service_->provider().Get(*id) : nullptr;
  }
  std::string HostWs() const {
    return config_.base_dir + "/users/u1/threads/t1/user-data/workspace";
  }

  const std::string kWs = "/mnt/user-data/workspace";
  test::TempDir dir_;
  runtime::ProviderConfig config_;
  std::unique_ptr<tools::ToolService> service_;
};

TEST_F(LocalNulTest, EveryToolRefusesANulInAPathBeforeAnyOtherCheck) {
  const std::string cut = kWs + "/ok.txt" + kNul + "/../../x";
  const std::string refused = "Error: parameter 'path' must not contain a NUL byte";
  // Before the fix read_file answered "SAFE" (ok.txt) and write_file created "new.txt".
  EXPECT_EQ(Call("read_file", {{"path", cut}}).text, refused);
  EXPECT_EQ(Call("write_file", {{"path", kWs + "/new.txt" + kNul + ".sh"}, {"content", "x"}}).text,
            refused);
  EXPECT_NE(::access((HostWs() + "/new.txt").c_str(), F_OK), 0);
  EXPECT_EQ(Call("ls", {{"path", kWs + kNul + "/../../.."}}).text, refused);
  EXPECT_EQ(Call("grep", {{"path", cut}, {"pattern", "SAFE"}}).text, refused);
  EXPECT_EQ(Call("glob", {{"path", kWs + kNul + "x"}, {"pattern", "*"}}).text, refused);
  EXPECT_EQ(Call("str_replace", {{"path", cut}, {"old_str", "SAFE"}, {"new_str", "x"}}).text,
            refused);
  EXPECT_EQ(Call("bash", {{"command", "echo a" + kNul + "; rm -rf /"}}).text,
            "Error: parameter 'command' must not contain a NUL byte");
  EXPECT_EQ(Call("grep", {{"path", kWs}, {"pattern", "SAFE"}, {"glob", "*.txt" + kNul + "x"}}).text,
            "Error: parameter 'glob' must not contain a NUL byte");
  // Data may hold NULs: file content, and the grep pattern (RE2 takes its length).
  EXPECT_EQ(Call("write_file", {{"path", kWs + "/bin.dat"}, {"content", "a" + kNul + "b"}}).text,
            "OK");
  auto written = ReadFile(HostWs() + "/bin.dat");
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_EQ(*written, "a" + kNul + "b");
  EXPECT_EQ(Call("grep", {{"path", kWs}, {"pattern", "x" + kNul}}).text,
            "No matches found under " + kWs);
}

TEST_F(LocalNulTest, TheSandboxInterfaceRefusesNulsWhateverCallsIt) {
  auto sb = Sandbox();
  ASSERT_TRUE(sb);
  const std::string cut = kWs + "/ok.txt" + kNul + "/../../x";
  auto expect_refused = [](const runtime::SandboxError& e, const std::string& what) {
    EXPECT_EQ(e.code, runtime::SandboxErrc::kInvalidArgument) << e.message;
    EXPECT_EQ(e.message, what + " must not contain a NUL byte");
  };
  auto read = sb->ReadFile(cut, std::nullopt, std::nullopt);
  ASSERT_FALSE(read) << "read " << *read;
  expect_refused(read.error(), "path");
  auto write = sb->WriteFile(kWs + "/new.txt" + kNul + ".sh", "x", false);
  ASSERT_FALSE(write);
  expect_refused(write.error(), "path");
  EXPECT_NE(::access((HostWs() + "/new.txt").c_str(), F_OK), 0);
  auto update = sb->UpdateFile(kWs + "/new.txt" + kNul, "x");
  ASSERT_FALSE(update);
  auto download = sb->DownloadFile(cut);
  ASSERT_FALSE(download);
  expect_refused(download.error(), "path");
  auto list = sb->ListDir(kWs + kNul + "/..", 2);
  ASSERT_FALSE(list);
  expect_refused(list.error(), "path");
  auto grep = sb->Grep(cut, "SAFE", {});
  ASSERT_FALSE(grep);
  expect_refused(grep.error(), "path");
  runtime::GrepOptions with_glob;
  with_glob.glob = "*.txt" + kNul + "x";
  auto grep_glob = sb->Grep(kWs, "SAFE", with_glob);
  ASSERT_FALSE(grep_glob);
  expect_refused(grep_glob.error(), "glob");
  auto glob = sb->Glob(kWs, "*.txt" + kNul + "x", false, 10);
  ASSERT_FALSE(glob);
  expect_refused(glob.error(), "glob pattern");
  auto exec = sb->ExecuteCommand("echo a" + kNul + "b", {}, 5);
  ASSERT_FALSE(exec);
  expect_refused(exec.error(), "command");
  auto env = sb->ExecuteCommand("true", {{"A", "x" + kNul + "y"}}, 5);
  ASSERT_FALSE(env);
  expect_refused(env.error(), "env value of A");
  // The same calls without the NUL work.
  EXPECT_TRUE(sb->ReadFile(kWs + "/ok.txt", std::nullopt, std::nullopt));
}

TEST(JsonNul, NamesTheFirstStringOrKeyWithANul) {
  EXPECT_EQ(NulField(json{{"a", "ok"}, {"b", {1, "x"}}}), std::nullopt);
  EXPECT_EQ(NulField(json{{"argv", {"echo", "a" + kNul}}}), "argv[1]");
  json env = {{"env", json::array({json::array({"A", "1"}), json::array({"B", kNul})})}};
  EXPECT_EQ(NulField(env), "env[1][1]");
  EXPECT_EQ(NulField(json{{"env", {{"A", "1"}, {"B", kNul}}}}), "env.B");
  EXPECT_EQ(NulField(json{{"spec", {{"hostname", "h" + kNul}}}}), "spec.hostname");
  EXPECT_EQ(NulField(json{{"k" + kNul, 1}}), "a key of the object");
  EXPECT_EQ(NulField(json("x" + kNul)), "(the value)");
  // As parsed from the wire: "\u0000" is how JSON spells it.
  EXPECT_EQ(NulProblem(json::parse(R"({"sandbox":"th-1\u0000zzz"})")),
            "sandbox: contains a NUL byte");
}

TEST(SpecJsonNul, ASpecWithANulIsRefusedBeforeAnyFieldIsUsed) {
  runtime::JailSpec spec;
  spec.argv = {"true"};
  spec.hostname = "sand" + kNul + "box";
  auto back = runtime::SpecFromJson(runtime::SpecToJson(spec));
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error().message(), "sandbox spec: hostname: contains a NUL byte");
  spec.hostname = "sandbox";
  EXPECT_TRUE(runtime::SpecFromJson(runtime::SpecToJson(spec)));
}

// Validate(): the NUL is the one problem reported for the field, whatever else is wrong.
TEST(ValidateNul, EveryStringFieldRefusesANulFirst) {
  auto only = [](const runtime::JailSpec& spec) {
    auto problems = runtime::Validate(spec);
    return problems.size() == 1 ? problems[0] : ::testing::PrintToString(problems);
  };
  runtime::JailSpec spec;
  spec.argv = {"/bin/true"};
  ASSERT_EQ(runtime::Validate(spec).size(), 0u);
  runtime::JailSpec s = spec;
  s.hostname = "sand" + kNul + "box";
  EXPECT_EQ(only(s), "hostname: must not contain a NUL byte (got \"sand\\0box\")");
  s = spec;
  s.env = {{"A" + kNul + "B", "1"}};
  EXPECT_EQ(only(s), "env[0].name: must not contain a NUL byte (got \"A\\0B\")");
  s = spec;
  s.seccomp_profile = "default" + kNul + "x";
  EXPECT_EQ(only(s), "seccomp.profile: must not contain a NUL byte (got \"default\\0x\")");
  s = spec;
  s.cgroups.parent = "corral" + kNul + "/../x";
  EXPECT_EQ(only(s), "cgroups.parent: must not contain a NUL byte (got \"corral\\0/../x\")");
  s = spec;
  s.mounts = {{"/tmp" + kNul + "x", "/mnt/data", true}};
  EXPECT_EQ(only(s), "mounts[0].host_path: must not contain a NUL byte (got \"/tmp\\0x\")");
}

// The config YAML front end: "\0" in a double-quoted scalar is a NUL.
TEST(ConfigYamlNul, AJailSpecFromYamlWithANulFailsValidation) {
  runtime::JailSpec spec;
  spec.argv = {"/bin/true"};
  ASSERT_TRUE(runtime::LoadConfigText("hostname: \"sand\\0box\"\n", "test.yaml", &spec));
  ASSERT_EQ(spec.hostname, "sand" + kNul + "box");
  auto st = runtime::ValidateSpec(spec);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("hostname: must not contain a NUL byte"), std::string::npos)
      << st.error().message();
}

// A mode (runtime/spec/modes.h) is read whole and refused there, in Validate's words.
TEST(ConfigYamlNul, AModeWithANulIsRefusedWhereItIsRead) {
  runtime::JailSpec spec;
  auto st = runtime::LoadConfigText("cgroups: {driver: \"v2\\0\"}\n", "test.yaml", &spec);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(),
            "test.yaml:1: cgroups.driver: must not contain a NUL byte (got \"v2\\0\")");
}

TEST(ConfigYamlNul, TheSandboxSectionRefusesNulsInEveryString) {
  YAML::Node root = YAML::Load(R"(
sandbox:
  base_dir: "/var/lib/corral\0/../../tmp/x"
  mounts:
    - {host_path: "/srv\0x", container_path: /mnt/data}
  environment: {TOKEN: "ab\0cd"}
  audit_log: {path: "/var/log/a\0b"}
skills:
  path: "/srv/skills\0x"
)");
  runtime::ProviderConfig c;
  auto st = runtime::LoadProviderConfig(root["sandbox"], root["skills"], &c);
  ASSERT_FALSE(st) << "base_dir " << c.base_dir;
  const std::string& m = st.error().message();
  for (const char* want : {"sandbox.base_dir: must not contain a NUL byte",
                           "sandbox.mounts[0].host_path: must not contain a NUL byte",
                           "sandbox.environment.TOKEN: must not contain a NUL byte",
                           "sandbox.audit_log.path: must not contain a NUL byte",
                           "skills.path: must not contain a NUL byte"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
  }
}

}  // namespace
}  // namespace corral
