// The agent tools over the aio provider against a live `corral serve` on loopback: the
// tool layer's cases (tools_jail_test.cc) once more, through HTTP — the provisioner API
// makes each thread's sandbox, the AIO API serves its commands and files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/files.h"
#include "tests/integration/serve_fixture.h"
#include "tools/providers/aio_sandbox.h"
#include "tools/tool_service.h"

namespace corral::test {
namespace {

using nlohmann::json;

class ToolsAioTest : public ServeTest {
 protected:
  void SetUp() override {
    ServeTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(dir_.MakeDirs("skills/public", 0755));
    ASSERT_TRUE(dir_.WriteFile("skills/public/SKILL.md", "# skill\n", 0644));
    ASSERT_NO_FATAL_FAILURE(
        StartDaemon(Config() + "skills:\n  path: " + dir_.Join("skills") + "\n"));
    config_.use = runtime::ProviderKind::kAio;
    config_.provisioner_url = Url("");
    config_.provisioner_api_key = kKey;
    config_.base_dir = dir_.Join("base");
    config_.audit_log.path = dir_.Join("audit.jsonl");
    Rebuild();
  }
  void Rebuild() {
    auto s = tools::ToolService::FromConfig(config_, runtime::JailSpec());
    ASSERT_TRUE(s) << s.error().message();
    service_ = std::move(*s);
  }
  void TearDown() override {
    if (service_) service_->provider().Shutdown();  // DELETE /api/sandboxes/{id}
    ServeTest::TearDown();
  }
  tools::ToolOutput Call(const std::string& tool, const json& args,
                         const std::string& thread = "t1") {
    return service_->Call("default", thread, tool, args);
  }
  std::string Bash(const std::string& cmd, const std::string& thread = "t1") {
    return Call("bash", {{"command", cmd}}, thread).text;
  }

  runtime::ProviderConfig config_;
  std::unique_ptr<tools::ToolService> service_;
};

TEST_F(ToolsAioTest, BashFormatsLikeDeerFlow) {
  EXPECT_EQ(Bash("echo hi"), "hi\n");
  EXPECT_EQ(Bash("exit 3"), "\nExit Code: 3");
  EXPECT_EQ(Bash("true"), "(no output)");
  EXPECT_EQ(Bash("echo out; echo err >&2"), "out\n\nStd Error:\nerr\n");
  EXPECT_EQ(Bash("pwd"), "/mnt/user-data/workspace\n");
  EXPECT_EQ(Bash("id -u"), "1000\n");
}

TEST_F(ToolsAioTest, BackgroundSurvivesAndTimeoutsKillTheTree) {
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Bash("sleep 30 > /dev/null 2>&1 & echo serving"), "serving\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(Bash("pgrep -x sleep > /dev/null && echo alive"), "alive\n");

  config_.bash_command_timeout = 1;
  Rebuild();
  t0 = std::chrono::steady_clock::now();
  auto out =
      Call("bash", {{"command", "while true; do date +%s%N > /tmp/marker; sleep 0.1; done"}});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_NE(out.text.find("Command timed out after 1 second and was terminated."),
            std::string::npos)
      << out.text;
  std::string a = Bash("cat /tmp/marker");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(Bash("cat /tmp/marker"), a) << "the loop still runs";
  EXPECT_EQ(Bash("pgrep -x sleep > /dev/null && echo alive"), "alive\n")
      << "the timeout killed a background process of an earlier call";
}

TEST_F(ToolsAioTest, WriteReadAppendRangesAndErrors) {
  const std::string p = "/mnt/user-data/workspace/sub/dir/a.txt";
  EXPECT_EQ(Call("write_file", {{"path", p}, {"content", "one\ntwo\n"}}).text, "OK");
  EXPECT_EQ(Call("write_file", {{"path", p}, {"content", "three\n"}, {"append", true}}).text, "OK");
  EXPECT_EQ(Call("read_file", {{"path", p}}).text, "one\ntwo\nthree\n");
  EXPECT_EQ(Call("read_file", {{"path", p}, {"start_line", 2}, {"end_line", 3}}).text,
            "two\nthree\n");
  struct stat st;
  std::string host =
      dir_.Join("base") + "/users/default/threads/t1/user-data/workspace/sub/dir/a.txt";
  ASSERT_EQ(::stat(host.c_str(), &st), 0) << "the daemon's sandbox writes the thread's host dir";
  // As the sandbox user: whoever its bash writes as (a reserved host id: identity.h).
  Bash("touch by-bash");
  struct stat bash_st;
  ASSERT_EQ(
      ::stat((dir_.Join("base") + "/users/default/threads/t1/user-data/workspace/by-bash").c_str(),
             &bash_st),
      0);
  EXPECT_EQ(st.st_uid, bash_st.st_uid);
  EXPECT_NE(st.st_uid, 0u);
  EXPECT_EQ(Bash("cat sub/dir/a.txt | wc -l"), "3\n");
  auto missing = Call("read_file", {{"path", "/mnt/user-data/workspace/nope"}});
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.text.rfind("Error: ", 0), 0u) << missing.text;
  auto ro = Call("write_file", {{"path", "/mnt/skills/public/x"}, {"content", "x"}});
  EXPECT_FALSE(ro.ok) << ro.text;
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/skills/public/SKILL.md"}}).text, "# skill\n");
  auto etc = Call("write_file", {{"path", "/etc/passwd"}, {"content", "x"}});
  EXPECT_FALSE(etc.ok) << etc.text;
}

TEST_F(ToolsAioTest, LsGlobGrepAndIgnorePatterns) {
  Bash(
      "mkdir -p src node_modules/pkg; echo 'def Foo(): pass' > src/a.py; "
      "echo 'foo' > node_modules/pkg/b.py; echo x > top.py");
  auto g = Call("glob", {{"path", "/mnt/user-data/workspace"}, {"pattern", "**/*.py"}});
  EXPECT_EQ(g.text,
            "Found 2 paths under /mnt/user-data/workspace\n"
            "1. /mnt/user-data/workspace/src/a.py\n2. /mnt/user-data/workspace/top.py");
  auto gr = Call("grep", {{"path", "/mnt/user-data/workspace"}, {"pattern", "foo"}});
  EXPECT_EQ(gr.text,
            "Found 1 matches under /mnt/user-data/workspace\n"
            "/mnt/user-data/workspace/src/a.py:1: def Foo(): pass");
  auto ls = Call("ls", {{"path", "/mnt/user-data/workspace"}});
  EXPECT_NE(ls.text.find("/mnt/user-data/workspace/src/a.py"), std::string::npos) << ls.text;
  EXPECT_EQ(ls.text.find("node_modules/pkg"), std::string::npos) << ls.text;
}

TEST_F(ToolsAioTest, ThreadsGetTheirOwnSandboxes) {
  EXPECT_EQ(Bash("echo one > /tmp/mine; cat /tmp/mine", "t1"), "one\n");
  EXPECT_EQ(Bash("cat /tmp/mine 2>/dev/null || echo absent", "t2"), "absent\n");
  auto list = Api("GET", "/api/sandboxes").Json();
  EXPECT_EQ(list.value("count", 0), 2) << list.dump();
}

TEST_F(ToolsAioTest, BinaryUpdateAndDownloadRoundTrip) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  Bash("true");  // the thread's sandbox exists
  auto id = service_->provider().Acquire("t1", "default");
  ASSERT_TRUE(id) << id.error().message();
  auto sandbox = service_->provider().Get(*id);
  ASSERT_NE(sandbox, nullptr);
  auto put = sandbox->UpdateFile("/mnt/user-data/uploads/all.bin", bytes);
  ASSERT_TRUE(put) << put.error().message;
  auto got = sandbox->DownloadFile("/mnt/user-data/uploads/all.bin");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, bytes);
  auto env = sandbox->ExecuteCommand("echo $ONLY_HERE", {{"ONLY_HERE", "v1"}}, 30);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->text, "v1\n");
  auto later = sandbox->ExecuteCommand("echo \"[$ONLY_HERE]\"", {}, 30);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->text, "[]\n");
  auto nope = sandbox->DownloadFile("/mnt/user-data/uploads/none.bin");
  ASSERT_FALSE(nope);
  EXPECT_EQ(nope.error().code, runtime::SandboxErrc::kNotFound) << nope.error().message;
}

}  // namespace
}  // namespace corral::test
