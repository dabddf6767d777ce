// A thread's sandbox over the lifetime of a conversation, through the agent tools: every
// tool call is activity for the idle reaper, a reap never races a call, a sandbox made
// anew says so, two base directories never share a sandbox, and no error an agent reads
// names a host path. Real persistent sandboxes; root only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/sandboxes/persistent.h"
#include "tests/support/tools_jail_fixture.h"
#include "tools/providers/thread_dirs.h"

namespace corral::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kRecreated = "has been created anew";

class ToolsIdleTest : public ToolsJailTest {
 protected:
  void SetUp() override {
    SetUpWith([](runtime::ProviderConfig& c) { c.idle_timeout = 3; });
  }
  void TearDown() override {
    ToolsJailTest::TearDown();
    (void)runtime::RemoveSandbox(SandboxName());  // made by calls "as new processes"
  }

  // One call the way `corral tool` makes it: a new process, a new provider.
  tools::ToolOutput CallAsNewProcess(const std::string& tool, const json& args) {
    runtime::JailSpec spec;
    spec.limits.timeout_seconds = 30;
    auto service = tools::ToolService::FromConfig(config_, spec);
    EXPECT_TRUE(service) << service.error().message();
    if (!service) return {};
    return (*service)->Call("alice", "t1", tool, args);
  }
  std::string SandboxName() const {
    return runtime::JailSandboxName(config_.base_dir, "alice", "t1");
  }
};

// The review's case: bash leaves state and a background process, then only file tools
// for longer than the idle timeout, then bash again: nothing may be lost.
TEST_F(ToolsIdleTest, FileToolsCountAsActivityForTheIdleReaper) {
  auto first = CallAsNewProcess(
      "bash", {{"command", "echo kept > /tmp/state; sleep 300 > /dev/null 2>&1 & echo started"}});
  ASSERT_EQ(first.text, "started\n");
  ASSERT_TRUE(dir_.WriteFile("base/users/alice/threads/t1/user-data/workspace/f", "x\n", 0644));
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(milliseconds(1100));
    EXPECT_EQ(CallAsNewProcess("read_file", {{"path", "/mnt/user-data/workspace/f"}}).text, "x\n");
    // Any corral process sweeps idle sandboxes; this one was used a moment ago.
    EXPECT_TRUE(runtime::ReapIdleSandboxes().empty()) << "reaped after read_file " << i;
  }
  auto info = runtime::InspectSandbox(SandboxName());
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_LT(info->idle_seconds, 2.0);
  auto last = CallAsNewProcess(
      "bash", {{"command", "cat /tmp/state; pgrep -x sleep >/dev/null && echo alive"}});
  EXPECT_EQ(last.text, "kept\nalive\n");
}

// The same conversation in one long-lived process (a daemon's provider).
TEST_F(ToolsIdleTest, FileToolsCountAsActivityInOneProcess) {
  ASSERT_EQ(Bash("echo kept > /tmp/state; echo ok"), "ok\n");
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(milliseconds(1100));
    EXPECT_EQ(Call("ls", {{"path", "/mnt/user-data/uploads"}}).text, "(empty)");
  }
  EXPECT_EQ(Bash("cat /tmp/state"), "kept\n");
}

// A sandbox held by a call in flight is never reaped, however idle its record says it is.
TEST_F(ToolsIdleTest, AHeldSandboxIsNeverReaped) {
  ASSERT_EQ(CallAsNewProcess("bash", {{"command", "echo ok"}}).text, "ok\n");
  auto hold = runtime::HoldSandbox(SandboxName());
  ASSERT_TRUE(hold) << hold.error().message();
  std::this_thread::sleep_for(milliseconds(3300));
  EXPECT_TRUE(runtime::ReapIdleSandboxes().empty());
  auto info = runtime::InspectSandbox(SandboxName());
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->alive);
}

// When a thread's sandbox did go (idle timeout, rm, a dead init), the next answer says so
// once; the first sandbox a thread ever gets says nothing.
TEST_F(ToolsIdleTest, ARecreatedSandboxIsAnnouncedOnce) {
  auto first = CallAsNewProcess("bash", {{"command", "echo one"}});
  EXPECT_EQ(first.text, "one\n");
  ASSERT_TRUE(runtime::RemoveSandbox(SandboxName()));
  auto again = CallAsNewProcess("bash", {{"command", "echo two"}});
  EXPECT_EQ(again.text.rfind("two\n", 0), 0u) << again.text;
  EXPECT_NE(again.text.find(kRecreated), std::string::npos) << again.text;
  EXPECT_NE(again.text.find("/mnt/user-data is unchanged"), std::string::npos) << again.text;
  auto third = CallAsNewProcess("bash", {{"command", "echo three"}});
  EXPECT_EQ(third.text, "three\n");
  // A file tool's answer carries it too.
  ASSERT_TRUE(runtime::RemoveSandbox(SandboxName()));
  auto ls = CallAsNewProcess("ls", {{"path", "/mnt/user-data/uploads"}});
  EXPECT_EQ(ls.text.rfind("(empty)", 0), 0u) << ls.text;
  EXPECT_NE(ls.text.find(kRecreated), std::string::npos) << ls.text;
}

// Two base directories (two DeerFlow deployments on one host) with the same thread id.
TEST_F(ToolsJailTest, TwoBaseDirectoriesNeverShareASandbox) {
  runtime::ProviderConfig other_config = config_;
  other_config.base_dir = dir_.Join("other-base");
  runtime::JailSpec spec;
  spec.limits.timeout_seconds = 30;
  auto other = tools::ToolService::FromConfig(other_config, spec);
  ASSERT_TRUE(other) << other.error().message();
  EXPECT_EQ(Call("write_file", {{"path", "/mnt/user-data/workspace/who"}, {"content", "A"}}).text,
            "OK");
  auto b = (*other)->Call("alice", "t1", "write_file",
                          {{"path", "/mnt/user-data/workspace/who"}, {"content", "B"}});
  EXPECT_EQ(b.text, "OK");
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/who"}}).text, "A");
  EXPECT_EQ((*other)->Call("alice", "t1", "bash", {{"command", "cat who"}}).text, "B");
  EXPECT_NE(runtime::JailSandboxName(config_.base_dir, "alice", "t1"),
            runtime::JailSandboxName(other_config.base_dir, "alice", "t1"));
  (*other)->provider().Shutdown();
}

// Every error path an agent can reach: none of the texts names a host path.
TEST_F(ToolsJailTest, NoErrorAnAgentReadsNamesAHostPath) {
  ASSERT_EQ(Bash("mkdir -p /mnt/user-data/workspace/d; echo ok"), "ok\n");
  const std::vector<std::pair<std::string, json>> calls = {
      {"read_file", {{"path", "/mnt/user-data/workspace/missing"}}},
      {"read_file", {{"path", "/mnt/user-data/workspace/d"}}},
      {"read_file", {{"path", "relative/path"}}},
      {"read_file", {{"path", "/etc/shadow"}}},
      {"read_file", {{"path", "/proc/1/root/etc/passwd"}}},
      {"ls", {{"path", "/mnt/user-data/nowhere"}}},
      {"ls", {{"path", "/etc/passwd"}}},
      {"write_file", {{"path", "/mnt/skills/x"}, {"content", "x"}}},
      {"write_file", {{"path", "/mnt/user-data/workspace/d"}, {"content", "x"}}},
      {"write_file", {{"path", "/usr/bin/x"}, {"content", "x"}}},
      {"write_file", {{"path", "/proc/self/x"}, {"content", "x"}}},
      {"str_replace",
       {{"path", "/mnt/user-data/workspace/none"}, {"old_str", "a"}, {"new_str", "b"}}},
      {"glob", {{"path", "/mnt/user-data/none"}, {"pattern", "*"}}},
      {"grep", {{"path", "/mnt/user-data"}, {"pattern", "("}}},
      {"grep", {{"path", "/nowhere"}, {"pattern", "x"}}},
      {"bash", json::object()},
      {"no_such_tool", json::object()},
  };
  auto sandbox = runtime::InspectSandbox(runtime::JailSandboxName(config_.base_dir, "alice", "t1"));
  ASSERT_TRUE(sandbox) << sandbox.error().message();
  const std::vector<std::string> host_markers = {
      dir_.path(), config_.base_dir, "/run/corral", "/var/lib/corral",
      "/proc/" + std::to_string(sandbox->record.init_pid) + "/root"};
  int errors = 0;
  auto check = [&](const std::string& what, const tools::ToolOutput& out) {
    if (!out.ok) ++errors;
    for (const auto& marker : host_markers) {
      EXPECT_EQ(out.text.find(marker), std::string::npos)
          << what << " -> " << out.text << " (names " << marker << ")";
    }
  };
  for (const auto& [tool, args] : calls) check(tool + " " + args.dump(), Call(tool, args));
  // Bad ids and a sandbox whose name another thread's record holds (a hash collision).
  check("bad thread", Call("ls", {{"path", "/mnt/user-data"}}, "../t"));
  check("bad user", Call("ls", {{"path", "/mnt/user-data"}}, "t1", "a/b"));
  ASSERT_TRUE(dir_.MakeDirs("elsewhere/user-data", 0755));
  runtime::CreateRequest squatter;
  squatter.name = runtime::JailSandboxName(config_.base_dir, "alice", "t9");
  squatter.spec.user_data_dir = dir_.Join("elsewhere/user-data");
  ASSERT_TRUE(runtime::CreateSandbox(squatter));
  auto clash = Call("ls", {{"path", "/mnt/user-data"}}, "t9");
  EXPECT_NE(clash.text.find("belongs to another thread"), std::string::npos) << clash.text;
  check("name clash", clash);
  EXPECT_TRUE(runtime::RemoveSandbox(squatter.name));
  EXPECT_GE(errors, static_cast<int>(calls.size()) - 2) << "the sweep must exercise error paths";
}

}  // namespace
}  // namespace corral::test
