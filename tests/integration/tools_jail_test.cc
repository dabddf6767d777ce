// The agent tools over the jail provider, black-box: real persistent sandboxes, each
// test's thread data in a temp dir, every sandbox removed by provider Shutdown().
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/files.h"
#include "runtime/sandboxes/persistent.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tools_jail_fixture.h"
#include "tools/providers/jail_sandbox.h"
#include "tools/tool_service.h"

namespace corral::test {
namespace {

using nlohmann::json;

TEST_F(ToolsJailTest, BashFormatsLikeDeerFlow) {
  EXPECT_EQ(Bash("echo hi"), "hi\n");
  EXPECT_EQ(Bash("exit 3"), "\nExit Code: 3");
  EXPECT_EQ(Bash("true"), "(no output)");
  EXPECT_EQ(Bash("echo out; echo err >&2"), "out\n\nStd Error:\nerr\n");
  EXPECT_EQ(Bash("pwd"), "/mnt/user-data/workspace\n");
  EXPECT_EQ(Bash("id -u"), "1000\n");
}

TEST_F(ToolsJailTest, BackgroundSurvivesAndStdinIsAtEof) {
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Bash("sleep 5 > /dev/null 2>&1 & echo serving"), "serving\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(Bash("pgrep -x sleep > /dev/null && echo alive"), "alive\n");
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Bash("read x; echo got"), "got\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST_F(ToolsJailTest, TimeoutKillsTheTree) {
  runtime::ProviderConfig c = config_;
  c.bash_command_timeout = 1;
  runtime::JailSpec spec;
  auto s = tools::ToolService::FromConfig(c, spec);
  ASSERT_TRUE(s);
  auto t0 = std::chrono::steady_clock::now();
  auto out = (*s)->Call("alice", "t1", "bash",
                        {{"command", "while true; do date +%s%N > /tmp/marker; sleep 0.1; done"}});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(out.text.find("Command timed out after 1 second and was terminated."),
            std::string::npos)
      << out.text;
  EXPECT_EQ(out.limit, "wall_time");
  std::string a = Bash("cat /tmp/marker");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(Bash("cat /tmp/marker"), a) << "the loop still runs";
}

TEST_F(ToolsJailTest, OutputTruncationAndRedaction) {
  std::string out = Bash("head -c 30000 /dev/zero | tr '\\0' a");
  EXPECT_LE(out.size(), 20000u);
  EXPECT_NE(out.find("\n... [middle truncated: "), std::string::npos);
  EXPECT_EQ(Bash("echo $SKILL_TOKEN"), "[redacted]\n");
}

TEST_F(ToolsJailTest, WriteReadAppendRangesAndOwnership) {
  const std::string p = "/mnt/user-data/workspace/sub/dir/a.txt";
  EXPECT_EQ(Call("write_file", {{"path", p}, {"content", "one\ntwo\n"}}).text, "OK");
  EXPECT_EQ(Call("write_file", {{"path", p}, {"content", "three\n"}, {"append", true}}).text, "OK");
  EXPECT_EQ(Call("read_file", {{"path", p}}).text, "one\ntwo\nthree\n");
  EXPECT_EQ(Call("read_file", {{"path", p}, {"start_line", 2}, {"end_line", 3}}).text,
            "two\nthree\n");
  EXPECT_EQ(Call("read_file", {{"path", p}, {"start_line", 9}}).text,
            "(start_line exceeds file length)");
  struct stat st;
  std::string host = config_.base_dir + "/users/alice/threads/t1/user-data/workspace/sub/dir/a.txt";
  ASSERT_EQ(::stat(host.c_str(), &st), 0);
  // As the sandbox user: whoever its bash writes as (a reserved host id: identity.h).
  Bash("touch by-bash");
  struct stat bash_st;
  ASSERT_EQ(
      ::stat((config_.base_dir + "/users/alice/threads/t1/user-data/workspace/by-bash").c_str(),
             &bash_st),
      0);
  EXPECT_EQ(st.st_uid, bash_st.st_uid);
  EXPECT_EQ(st.st_gid, bash_st.st_gid);
  EXPECT_NE(st.st_uid, 0u);
  EXPECT_EQ(Bash("cat sub/dir/a.txt | wc -l"), "3\n");
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/nope"}}).text,
            "Error: File not found: /mnt/user-data/workspace/nope");
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/sub"}}).text,
            "Error: Path is a directory, not a file: /mnt/user-data/workspace/sub");
}

TEST_F(ToolsJailTest, ReadOnlyMountsAndSandboxRights) {
  auto w = Call("write_file", {{"path", "/mnt/skills/public/x"}, {"content", "x"}});
  EXPECT_FALSE(w.ok);
  EXPECT_NE(w.text.find("Read-only file system"), std::string::npos) << w.text;
  // A path in the error's own words is the one the caller gave, its leading / included (it
  // read "OSError: mnt/user-data/workspace/plain: Not a directory").
  Bash("echo x > plain");
  w = Call("write_file", {{"path", "/mnt/user-data/workspace/plain/x"}, {"content", "x"}});
  EXPECT_FALSE(w.ok);
  EXPECT_NE(w.text.find("OSError: /mnt/user-data/workspace/plain: Not a directory"),
            std::string::npos)
      << w.text;
  w = Call("write_file", {{"path", "/mnt/acp-workspace/x"}, {"content", "x"}});
  EXPECT_FALSE(w.ok) << w.text;
  w = Call("write_file", {{"path", "/etc/passwd"}, {"content", "x"}});
  EXPECT_FALSE(w.ok) << w.text;
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/skills/public/SKILL.md"}}).text, "# skill\n");
}

TEST_F(ToolsJailTest, SymlinkAndDotDotGamesStayInTheSandbox) {
  Bash(
      "ln -s /etc/passwd pw; ln -s / root; ln -s ../../../../../../etc ups; "
      "ln -s /proc/self/root magic; mkdir -p d; ln -s /root/.bashrc d/rc");
  const std::string host_passwd = *ReadFile("/etc/passwd");
  auto pw = Call("read_file", {{"path", "/mnt/user-data/workspace/pw"}});
  ASSERT_TRUE(pw.ok) << pw.text;
  EXPECT_NE(pw.text, host_passwd);
  EXPECT_NE(pw.text.find("sandbox:x:1000"), std::string::npos) << pw.text;
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/ups/passwd"}}).text, pw.text);
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/../../../../etc/passwd"}}).text,
            pw.text);
  EXPECT_FALSE(Call("read_file", {{"path", "/mnt/user-data/workspace/magic/etc/passwd"}}).ok);
  // The base dir lives on the host, not in the sandbox: no tool can name it.
  EXPECT_FALSE(Call("read_file", {{"path", dir_.Join("audit.jsonl")}}).ok);
  EXPECT_FALSE(Call("ls", {{"path", config_.base_dir}}).ok);
  // Writing through a symlink to the sandbox's /etc is refused by the sandbox's rights.
  EXPECT_FALSE(Call("write_file", {{"path", "/mnt/user-data/workspace/pw"}, {"content", "x"}}).ok);
  EXPECT_EQ(*ReadFile("/etc/passwd"), host_passwd);
}

// A host file the sandbox user could read on the host (world-readable, in a searchable
// dir): only resolution inside the sandbox's root keeps the tools from reaching it.
TEST_F(ToolsJailTest, HostOnlyFileUnreachableThroughAnyTool) {
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_TRUE(dir_.MakeDirs("hostonly", 0755));
  ASSERT_TRUE(dir_.WriteFile("hostonly/secret.txt", "HOST-ONLY-MARKER\n", 0644));
  const std::string host_dir = dir_.Join("hostonly");
  Bash("ln -s " + host_dir + "/secret.txt s1; ln -s " + host_dir +
       " d1; "
       "ln -s ../../../../../../../../" +
       host_dir.substr(1) + " d2");
  // On the host the planted links do lead to the file: only the sandbox-rooted
  // resolution keeps the tools away from it.
  const std::string ws = config_.base_dir + "/users/alice/threads/t1/user-data/workspace";
  ASSERT_EQ(*ReadFile(ws + "/s1"), "HOST-ONLY-MARKER\n");
  const std::vector<std::string> paths = {
      "/mnt/user-data/workspace/s1", "/mnt/user-data/workspace/d1/secret.txt",
      "/mnt/user-data/workspace/d2/secret.txt", host_dir + "/secret.txt"};
  for (const std::string& p : paths) {
    auto r = Call("read_file", {{"path", p}});
    EXPECT_FALSE(r.ok) << p << ": " << r.text;
    EXPECT_EQ(r.text.find("HOST-ONLY-MARKER"), std::string::npos) << p;
  }
  for (const char* tool : {"grep", "glob", "ls"}) {
    auto r = Call(tool, {{"path", "/mnt/user-data/workspace"},
                         {"pattern", std::string(tool) == "glob" ? "**" : "HOST"}});
    EXPECT_EQ(r.text.find("HOST-ONLY-MARKER"), std::string::npos) << tool << ": " << r.text;
    EXPECT_EQ(r.text.find("secret.txt"), std::string::npos) << tool << ": " << r.text;
  }
  EXPECT_FALSE(
      Call("write_file", {{"path", "/mnt/user-data/workspace/d1/new"}, {"content", "x"}}).ok);
  EXPECT_FALSE(
      Call("str_replace",
           {{"path", "/mnt/user-data/workspace/s1"}, {"old_str", "HOST"}, {"new_str", "X"}})
          .ok);
  struct stat st;
  EXPECT_NE(::stat((host_dir + "/new").c_str(), &st), 0);
  EXPECT_EQ(*ReadFile(host_dir + "/secret.txt"), "HOST-ONLY-MARKER\n");
}

TEST_F(ToolsJailTest, TocTouSwapDuringReadsNeverReachesHostFiles) {
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_TRUE(dir_.MakeDirs("hostonly", 0755));
  ASSERT_TRUE(dir_.WriteFile("hostonly/secret.txt", "HOST-ONLY-MARKER\n", 0644));
  const std::string host_dir = dir_.Join("hostonly");
  // A directory and a symlink to the host directory keep trading places while we read.
  Bash("(for i in $(seq 1 2000); do rm -rf swap; ln -s " + host_dir +
       " swap; rm -f swap; "
       "mkdir swap; echo inner > swap/secret.txt; done) > /dev/null 2>&1 &");
  int inner = 0;
  for (int i = 0; i < 60; ++i) {
    auto r = Call("read_file", {{"path", "/mnt/user-data/workspace/swap/secret.txt"}});
    EXPECT_EQ(r.text.find("HOST-ONLY-MARKER"), std::string::npos);
    inner += r.text == "inner\n";
    auto g = Call("grep", {{"path", "/mnt/user-data/workspace"}, {"pattern", "MARKER"}});
    EXPECT_EQ(g.text.find("HOST-ONLY"), std::string::npos) << g.text;
  }
  EXPECT_GT(inner, 0) << "the race never let a read through: the test did not exercise it";
}

TEST_F(ToolsJailTest, GlobGrepAndIgnorePatterns) {
  Bash(
      "mkdir -p src node_modules/pkg; echo 'def Foo(): pass' > src/a.py; "
      "echo 'foo' > node_modules/pkg/b.py; printf 'foo\\0bin' > src/bin.dat; echo x > top.py");
  auto g = Call("glob", {{"path", "/mnt/user-data/workspace"}, {"pattern", "**/*.py"}});
  EXPECT_EQ(g.text,
            "Found 2 paths under /mnt/user-data/workspace\n"
            "1. /mnt/user-data/workspace/src/a.py\n2. /mnt/user-data/workspace/top.py");
  auto gr = Call("grep", {{"path", "/mnt/user-data/workspace"}, {"pattern", "foo"}});
  EXPECT_EQ(gr.text,
            "Found 1 matches under /mnt/user-data/workspace\n"
            "/mnt/user-data/workspace/src/a.py:1: def Foo(): pass");
  gr = Call("grep",
            {{"path", "/mnt/user-data/workspace"}, {"pattern", "foo"}, {"case_sensitive", true}});
  EXPECT_EQ(gr.text, "No matches found under /mnt/user-data/workspace");
  gr = Call("grep", {{"path", "/mnt/user-data/workspace"}, {"pattern", "("}});
  EXPECT_EQ(gr.text.rfind("Error: Invalid regex pattern: ", 0), 0u) << gr.text;
}

TEST_F(ToolsJailTest, ConcurrentStrReplaceLosesNoUpdate) {
  std::string content;
  for (int i = 0; i < 16; ++i) content += "k" + std::to_string(i) + "\n";
  const std::string p = "/mnt/user-data/workspace/c.txt";
  ASSERT_EQ(Call("write_file", {{"path", p}, {"content", content}}).text, "OK");
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      Call("str_replace", {{"path", p},
                           {"old_str", "k" + std::to_string(i) + "\n"},
                           {"new_str", "v" + std::to_string(i) + "\n"}});
    });
  }
  for (auto& t : threads) t.join();
  std::string after = Call("read_file", {{"path", p}}).text;
  for (int i = 0; i < 16; ++i) {
    EXPECT_NE(after.find("v" + std::to_string(i) + "\n"), std::string::npos) << after;
  }
}

TEST_F(ToolsJailTest, UsersAndThreadsAreIsolatedAndFoundAgain) {
  Call("write_file", {{"path", "/mnt/user-data/workspace/m"}, {"content", "alice-t1"}});
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/m"}}, "t2").text,
            "Error: File not found: /mnt/user-data/workspace/m");
  EXPECT_EQ(Call("read_file", {{"path", "/mnt/user-data/workspace/m"}}, "t1", "bob").text,
            "Error: File not found: /mnt/user-data/workspace/m");
  auto a = service_->provider().Acquire("t1", "alice");
  auto b = service_->provider().Acquire("t1", "bob");
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  // A second provider (as a new corral process would have) finds the same sandbox.
  runtime::JailSpec spec;
  auto other = tools::ToolService::FromConfig(config_, spec);
  ASSERT_TRUE(other);
  EXPECT_EQ(
      (*other)->Call("alice", "t1", "read_file", {{"path", "/mnt/user-data/workspace/m"}}).text,
      "alice-t1");
  EXPECT_EQ(*(*other)->provider().Acquire("t1", "alice"), *a);
  EXPECT_FALSE(service_->provider().Acquire("../x", "alice"));
  EXPECT_FALSE(service_->provider().Acquire("t1", "al/ice"));
}

TEST_F(ToolsJailTest, AuditLinesWrittenWithoutSecrets) {
  Bash("echo $SKILL_TOKEN");
  Call("write_file",
       {{"path", "/mnt/user-data/workspace/big"}, {"content", std::string(500, 'z')}});
  auto text = ReadFile(config_.audit_log.path);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->find("sk-very-secret-value-123"), std::string::npos);
  size_t lines = 0;
  size_t pos = 0;
  while ((pos = text->find('\n', pos)) != std::string::npos) ++lines, ++pos;
  EXPECT_GE(lines, 2u);
  auto last = json::parse(text->substr(text->rfind('\n', text->size() - 2) + 1));
  EXPECT_EQ(last["tool"], "write_file");
  EXPECT_EQ(last["user"], "alice");
  EXPECT_EQ(last["outcome"], "ok");
  EXPECT_NE(last["args"]["content"].get<std::string>().find("... (500 chars)"), std::string::npos);
  EXPECT_TRUE(last["ts"].get<std::string>().back() == 'Z');
}

// Figure for the report, not an assertion: median latency of `bash echo hi`.
TEST_F(ToolsJailTest, MeasureBashLatency) {
  Bash("true");
  std::vector<double> ms;
  for (int i = 0; i < 50; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(Bash("echo hi"), "hi\n");
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("[latency] jail bash 'echo hi': median %.2f ms, p90 %.2f ms, min %.2f ms (n=50)\n",
              ms[25], ms[45], ms[0]);
  std::vector<double> rf;
  for (int i = 0; i < 50; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Call("read_file", {{"path", "/mnt/skills/public/SKILL.md"}});
    rf.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(rf.begin(), rf.end());
  std::printf("[latency] jail read_file: median %.2f ms (n=50)\n", rf[25]);
}

}  // namespace
}  // namespace corral::test
