// The tools over the local provider (no root): DeerFlow's LocalSandbox behaviours,
// virtual path validation, escapes through symlinks, host bash gating and masking.
#include "tools/providers/local_sandbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/files.h"
#include "tests/support/temp_dir.h"
#include "tools/tool_service.h"

namespace corral {
namespace {

using nlohmann::json;

class LocalToolsTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(false); }
  void Make(bool allow_bash) {
    config_.use = runtime::ProviderKind::kLocal;
    config_.base_dir = dir_.Join("base");
    config_.allow_host_bash = allow_bash;
    config_.bash_command_timeout = 5;
    config_.audit_log.path = dir_.Join("audit.jsonl");
    ASSERT_TRUE(dir_.MakeDirs("skills/public"));
    ASSERT_TRUE(dir_.WriteFile("skills/public/SKILL.md", "skill\n"));
    ASSERT_TRUE(dir_.WriteFile("host-secret", "HOSTSECRET\n"));
    config_.skills_path = dir_.Join("skills");
    auto s = tools::ToolService::FromConfig(config_, runtime::JailSpec{});
    ASSERT_TRUE(s) << s.error().message();
    service_ = std::move(*s);
  }
  tools::ToolOutput Call(const std::string& tool, const json& args, const std::string& t = "t1",
                         const std::string& u = "u1") {
    return service_->Call(u, t, tool, args);
  }
  std::string Ws() const { return config_.base_dir + "/users/u1/threads/t1/user-data/workspace"; }

  test::TempDir dir_;
  runtime::ProviderConfig config_;
  std::unique_ptr<tools::ToolService> service_;
};

TEST_F(LocalToolsTest, BashRefusedUnlessAllowed) {
  auto r = Call("bash", {{"command", "echo hi"}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text, std::string("Error: ") + runtime::kHostBashDisabledMessage);
}

TEST_F(LocalToolsTest, HostBashBehavesLikeDeerFlow) {
  Make(true);
  EXPECT_EQ(Call("bash", {{"command", "exit 3"}}).text, "\nExit Code: 3");
  EXPECT_EQ(Call("bash", {{"command", "echo o; echo e >&2"}}).text, "o\n\nStd Error:\ne\n");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Call("bash", {{"command", "read x; echo got"}}).text, "got\n");
  EXPECT_EQ(Call("bash", {{"command", "sleep 1 >/dev/null 2>&1 & echo serving"}}).text,
            "serving\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  // The workspace is the cwd, and host paths are masked back to virtual ones.
  EXPECT_EQ(Call("bash", {{"command", "pwd"}}).text, "/mnt/user-data/workspace\n");
  EXPECT_EQ(Call("bash", {{"command", "echo x > /mnt/user-data/outputs/o; cat " + Ws() +
                                          "/../outputs/o; ls /mnt/user-data/outputs"}})
                .text,
            "x\no\n");
}

TEST_F(LocalToolsTest, HostBashTimeoutKillsGroup) {
  Make(true);
  config_.bash_command_timeout = 1;
  auto s = tools::ToolService::FromConfig(config_, runtime::JailSpec{});
  ASSERT_TRUE(s);
  auto t0 = std::chrono::steady_clock::now();
  auto r = (*s)->Call("u1", "t1", "bash",
                      {{"command", "while true; do date +%s%N > marker; sleep 0.05; done"}});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(r.text.find("Command timed out after 1 second and was terminated."), std::string::npos)
      << r.text;
  auto a = ReadFile(Ws() + "/marker");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(*ReadFile(Ws() + "/marker"), *a);
}

TEST_F(LocalToolsTest, FileRoundTripAndMessages) {
  const std::string p = "/mnt/user-data/workspace/d/a.txt";
  EXPECT_EQ(Call("write_file", {{"path", p}, {"content", "a\nb\n"}}).text, "OK");
  EXPECT_EQ(Call("write_file", {{"path", p}, {"content", "c\n"}, {"append", true}}).text, "OK");
  EXPECT_EQ(Call("read_file", {{"path", p}, {"start_line", 2}, {"end_line", 3}}).text, "b\nc\n");
  EXPECT_EQ(Call("read_file", {{"path", p}, {"start_line", 0}}).text, "(start_line must be >= 1)");
  EXPECT_EQ(Call("read_file", {{"path", p}, {"start_line", 3}, {"end_line", 2}}).text,
            "(start_line > end_line — no lines in range)");
  EXPECT_EQ(Call("str_replace", {{"path", p}, {"old_str", "zz"}, {"new_str", "y"}}).text,
            "Error: String to replace not found in file: " + p);
  EXPECT_EQ(Call("str_replace", {{"path", p}, {"old_str", "b"}, {"new_str", "B"}}).text, "OK");
  EXPECT_EQ(Call("read_file", {{"path", p}}).text, "a\nB\nc\n");
  EXPECT_EQ(Call("write_file", {{"path", "/mnt/user-data/workspace/e"}, {"content", ""}}).text,
            "OK");
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/e"}}).text, "(empty)");
  EXPECT_EQ(Call("str_replace",
                 {{"path", "/mnt/user-data/workspace/e"}, {"old_str", ""}, {"new_str", "x"}})
                .text,
            "OK");
  auto big = Call("write_file", {{"path", p}, {"content", std::string(81921, 'x')}});
  EXPECT_EQ(big.text.rfind("Error: write_file content (81921 bytes) exceeds the 81920-byte "
                           "single-call limit.",
                           0),
            0u)
      << big.text;
  EXPECT_EQ(Call("ls", {{"path", "/mnt/user-data/workspace"}}).text,
            "/mnt/user-data/workspace/d/\n/mnt/user-data/workspace/d/a.txt\n"
            "/mnt/user-data/workspace/e");
  ASSERT_TRUE(
      dir_.WriteFile("base/users/u1/threads/t1/user-data/workspace/bin", std::string("\x7f"
                                                                                     "ELF\0\0",
                                                                                     6)));
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/bin"}})
                .text.rfind("Error: cannot read '/mnt/user-data/workspace/bin' as text", 0),
            0u);
}

TEST_F(LocalToolsTest, TraversalHostPathsAndReadOnlyRejected) {
  Call("ls", {{"path", "/mnt/user-data/workspace"}});  // creates the thread dirs
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/../../../../host-secret"}}).text,
            "Error: Access denied: path traversal detected");
  EXPECT_EQ(Call("read_file", {{"path", dir_.Join("host-secret")}}).text,
            "Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or "
            "configured mount paths are allowed");
  EXPECT_EQ(Call("read_file", {{"path", "/etc/passwd"}}).text.rfind("Error: Only paths", 0), 0u);
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/skills/public/SKILL.md"}}).text, "skill\n");
  auto w = Call("write_file", {{"path", "/mnt/skills/public/x"}, {"content", "x"}});
  EXPECT_NE(w.text.find("Read-only file system"), std::string::npos) << w.text;
  w = Call("write_file", {{"path", "/mnt/acp-workspace/x"}, {"content", "x"}});
  EXPECT_NE(w.text.find("Read-only file system"), std::string::npos) << w.text;
}

TEST_F(LocalToolsTest, SymlinksCannotLeaveTheMount) {
  Call("ls", {{"path", "/mnt/user-data/workspace"}});
  ASSERT_EQ(::symlink(dir_.Join("host-secret").c_str(), (Ws() + "/abs").c_str()), 0);
  ASSERT_EQ(::symlink("../../../../../../host-secret", (Ws() + "/rel").c_str()), 0);
  ASSERT_EQ(::symlink(dir_.path().c_str(), (Ws() + "/dir").c_str()), 0);
  for (const char* p : {"/mnt/user-data/workspace/abs", "/mnt/user-data/workspace/rel",
                        "/mnt/user-data/workspace/dir/host-secret"}) {
    EXPECT_EQ(Call("read_file", {{"path", p}}).text,
              "Error: Access denied: path escapes mounted directory")
        << p;
  }
  EXPECT_FALSE(
      Call("write_file", {{"path", "/mnt/user-data/workspace/dir/new"}, {"content", "x"}}).ok);
  EXPECT_FALSE(ReadFile(dir_.Join("new")));
  auto g = Call("grep", {{"path", "/mnt/user-data/workspace"}, {"pattern", "HOSTSECRET"}});
  EXPECT_EQ(g.text, "No matches found under /mnt/user-data/workspace");
  EXPECT_EQ(Call("ls", {{"path", "/mnt/user-data/workspace"}}).text, "(empty)");
}

TEST_F(LocalToolsTest, GlobGrepLimitsAndFilters) {
  ASSERT_TRUE(dir_.MakeDirs("base/users/u1/threads/t1/user-data/workspace"));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(dir_.WriteFile(
        "base/users/u1/threads/t1/user-data/workspace/f" + std::to_string(i) + ".txt",
        "needle " + std::to_string(i) + "\n"));
  }
  ASSERT_TRUE(dir_.MakeDirs("base/users/u1/threads/t1/user-data/workspace/node_modules"));
  ASSERT_TRUE(dir_.WriteFile("base/users/u1/threads/t1/user-data/workspace/node_modules/x.txt",
                             "needle\n"));
  auto g = Call("glob",
                {{"path", "/mnt/user-data/workspace"}, {"pattern", "*.txt"}, {"max_results", 2}});
  EXPECT_EQ(g.text,
            "Found 2 paths under /mnt/user-data/workspace (showing first 2)\n"
            "1. /mnt/user-data/workspace/f0.txt\n2. /mnt/user-data/workspace/f1.txt\n\n"
            "Results truncated. Narrow the path or pattern to see fewer matches.");
  auto gr = Call(
      "grep", {{"path", "/mnt/user-data/workspace"}, {"pattern", "NEEDLE"}, {"glob", "f[34].txt"}});
  EXPECT_EQ(gr.text,
            "Found 2 matches under /mnt/user-data/workspace\n"
            "/mnt/user-data/workspace/f3.txt:1: needle 3\n"
            "/mnt/user-data/workspace/f4.txt:1: needle 4");
  gr = Call("grep", {{"path", "/mnt/user-data/workspace/f2.txt"}, {"pattern", "needle"}});
  EXPECT_EQ(gr.text,
            "Found 1 matches under /mnt/user-data/workspace/f2.txt\n"
            "/mnt/user-data/workspace/f2.txt:1: needle 2");
  gr = Call("grep", {{"path", "/mnt/user-data/workspace"}, {"pattern", "e.d"}, {"literal", true}});
  EXPECT_EQ(gr.text, "No matches found under /mnt/user-data/workspace");
  gr = Call("grep",
            {{"path", "/mnt/user-data/workspace"}, {"pattern", "needle"}, {"max_results", 1}});
  EXPECT_NE(gr.text.find("Results truncated. Narrow the path or add a glob filter."),
            std::string::npos);
}

TEST_F(LocalToolsTest, ProviderIsolationAndConcurrentAcquire) {
  auto& p = service_->provider();
  auto a = p.Acquire("t1", "u1"), b = p.Acquire("t1", "u2"), c = p.Acquire("t2", "u1");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, "local:u1:t1");
  EXPECT_EQ(std::set<std::string>({*a, *b, *c}).size(), 3u);
  std::vector<std::thread> ts;
  std::vector<runtime::Sandbox*> got(8);
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&, i] { got[i] = p.Get(*p.Acquire("t9", "u1")).get(); });
  }
  for (auto& t : ts) t.join();
  for (auto* g : got) EXPECT_EQ(g, got[0]);
  Call("write_file", {{"path", "/mnt/user-data/workspace/m"}, {"content", "mine"}});
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/m"}}, "t1", "u2").text,
            "Error: File not found: /mnt/user-data/workspace/m");
  EXPECT_FALSE(p.Acquire("t1", "u:1"));
  EXPECT_EQ(p.Get("local:nobody:none"), nullptr);
}

TEST_F(LocalToolsTest, AuditRotatesBySize) {
  runtime::AuditLog log(dir_.Join("rot.jsonl"), 4096, 2, {"supersecret1"});
  runtime::AuditRecord r;
  r.tool = "bash";
  r.args = {{"command", "echo supersecret1 " + std::string(300, 'x')}};
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(log.Append(r));
  auto cur = ReadFile(dir_.Join("rot.jsonl"));
  auto old = ReadFile(dir_.Join("rot.jsonl.1"));
  ASSERT_TRUE(cur && old);
  EXPECT_LE(cur->size(), 4096u);
  EXPECT_EQ(cur->find("supersecret1"), std::string::npos);
  EXPECT_NE(cur->find("[redacted]"), std::string::npos);
  EXPECT_FALSE(ReadFile(dir_.Join("rot.jsonl.3")));
}

}  // namespace
}  // namespace corral
