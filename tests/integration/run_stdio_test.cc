// What a jail's stdio may reach of the caller (runtime/run/stdio.h), black-box through the
// corral binary:
//  - output to a terminal is relayed through the terminal filter: OSC 52, titles, DCS and
//    the rest arrive neutralised, SGR colours and UTF-8 intact;
//  - output to a pipe is byte-identical (no relay);
//  - a file (or other host path) given as stdin/stdout/stderr is relayed through a pipe,
//    so /proc/self/fd inside names no host path, with no byte lost and the exit status kept;
//  - `-t`/`-it` give the command a pty of the jail's own devpts, with the operator's
//    terminal raw while it runs and restored after, SIGWINCH forwarded, the status passed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

// printf(1) text: an OSC 52 clipboard write, an OSC 0 title, a DCS, an APC, a screen clear,
// a colour, UTF-8, and a bell.
const char kHostile[] =
    "a\\033]52;c;ZWNobyBwd25lZA==\\007b\\033]0;pwned\\033\\\\c\\033P+q544e\\033\\\\d"
    "\\033_Gf=1\\033\\\\e\\033[2J\\033[31mred\\033[0m gr\\303\\274n\\007\\n";
// What printf makes of it.
const std::string kHostileRaw =
    "a\x1b]52;c;ZWNobyBwd25lZA==\x07"
    "b\x1b]0;pwned\x1b\\c\x1bP+q544e\x1b\\d"
    "\x1b_Gf=1\x1b\\e\x1b[2J\x1b[31mred\x1b[0m gr\xc3\xbcn\x07\n";

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// sh -c SCRIPT on the host (for redirections around corral).
Result<RunResult> Shell(const std::string& script) { return RunProgram("/bin/sh", {"-c", script}); }

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

class RunStdioTest : public JailTest {
 protected:
  void TearDown() override {
    for (const auto& name : created_) (void)RunCorral({"rm", name});
    JailTest::TearDown();
  }
  std::string CreateSandbox() {
    static std::atomic<int> n{0};
    std::string name = "stdio-" + std::to_string(getpid()) + "-" + std::to_string(++n);
    Result<RunResult> r = RunCorral({"create", "--name", name});
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    created_.push_back(name);
    return name;
  }
  std::vector<std::string> created_;
};

TEST_F(RunStdioTest, OutputToATerminalArrivesNeutralised) {
  RunOptions pty;
  pty.use_pty = true;
  for (const char* pool : {"off", "auto"}) {
    auto r = RunCorral({"run", "--pool", pool, "--", "printf", kHostile}, pty);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->exit_code, 0) << r->Describe();
    // The pty turns \n into \r\n on its way to us.
    EXPECT_NE(r->out.find("abcde\x1b[31mred\x1b[0m gr\xc3\xbcn^G\r\n"), std::string::npos)
        << r->Describe();
    EXPECT_EQ(r->out.find("\x1b]"), std::string::npos) << r->Describe();
    EXPECT_EQ(r->out.find("\x1bP"), std::string::npos) << r->Describe();
    EXPECT_EQ(r->out.find("\x1b_"), std::string::npos) << r->Describe();
    EXPECT_EQ(r->out.find("\x1b[2J"), std::string::npos) << r->Describe();
    EXPECT_EQ(r->out.find("pwned"), std::string::npos) << r->Describe();
  }
}

TEST_F(RunStdioTest, StderrToATerminalIsNeutralisedToo) {
  RunOptions pty;
  pty.use_pty = true;
  auto r = RunCorral(
      {"run", "--pool", "off", "--", "sh", "-c", std::string("printf '") + kHostile + "' >&2"},
      pty);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->out.find("\x1b]"), std::string::npos) << r->Describe();
  EXPECT_NE(r->out.find("abcde"), std::string::npos) << r->Describe();
}

TEST_F(RunStdioTest, OutputToAPipeIsByteIdentical) {
  auto r = RunCorral({"run", "--pool", "off", "--", "printf", kHostile});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, kHostileRaw);
  // The very pipe the caller has, not a relay: nothing is added on this path.
  auto link = Shell("readlink /proc/$$/fd/1; " + CorralBinary() +
                    " run --pool off -- readlink /proc/self/fd/1");
  ASSERT_TRUE(link) << link.error().message();
  size_t nl = link->out.find('\n');
  ASSERT_NE(nl, std::string::npos) << link->Describe();
  std::string caller = link->out.substr(0, nl + 1);
  EXPECT_EQ(caller.rfind("pipe:", 0), 0u) << link->Describe();
  EXPECT_EQ(link->out, caller + caller) << link->Describe();
}

TEST_F(RunStdioTest, OutputToAFileIsByteIdenticalAndShowsNoHostPath) {
  TempDir dir;
  std::string out = dir.path() + "/out";
  auto r = Shell(CorralBinary() + " run --pool off -- printf " + Quoted(kHostile) + " > " + out);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(FileBytes(out), kHostileRaw);
}

TEST_F(RunStdioTest, FileRedirectsShowNoHostPathInside) {
  TempDir dir;
  std::string o = dir.path() + "/o", e = dir.path() + "/e", oe = dir.path() + "/oe";
  std::string run = CorralBinary() + " run --pool off ";
  auto r =
      Shell(run + "-- readlink /proc/self/fd/1 > " + o + "; " + run +
            "-- sh -c 'readlink /proc/self/fd/2 >&2' 2> " + e + "; " + run +
            "-i -- readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2 < /etc/hostname > " +
            oe + " 2>&1");
  ASSERT_TRUE(r) << r.error().message();
  for (const std::string& f : {o, e, oe}) {
    std::string text = FileBytes(f);
    EXPECT_EQ(text.find(dir.path()), std::string::npos) << f << ": " << text;
    EXPECT_EQ(text.find("/etc/hostname"), std::string::npos) << f << ": " << text;
    EXPECT_EQ(text.rfind("pipe:", 0), 0u) << f << ": " << text;
  }
}

TEST_F(RunStdioTest, RelayedFilesLoseNoDataAndKeepTheExitStatus) {
  TempDir dir;
  std::string in = dir.path() + "/in", out = dir.path() + "/out", expect = dir.path() + "/expect";
  auto prep =
      Shell("seq 1 300000 > " + in + "; seq 1 300000 > " + expect + "; seq 1 300000 >> " + expect);
  ASSERT_TRUE(prep && prep->exit_code == 0);
  // stdin from a file and stdout to a file, both relayed; the command exits 7.
  auto r = Shell(CorralBinary() + " run --pool off -i -- sh -c 'cat; seq 1 300000; exit 7' < " +
                 in + " > " + out);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 7) << r->Describe();
  std::string got = FileBytes(out), want = FileBytes(expect);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
}

TEST_F(RunStdioTest, ExecRelaysTooForFilesAndTerminals) {
  std::string name = CreateSandbox();
  TempDir dir;
  std::string out = dir.path() + "/out";
  auto r =
      Shell(CorralBinary() + " exec --pool off " + name + " -- readlink /proc/self/fd/1 > " + out);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(FileBytes(out).rfind("pipe:", 0), 0u) << FileBytes(out);
  RunOptions pty;
  pty.use_pty = true;
  auto t = RunCorral({"exec", "--pool", "off", name, "--", "printf", kHostile}, pty);
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->out.find("\x1b]"), std::string::npos) << t->Describe();
  EXPECT_NE(t->out.find("abcde\x1b[31mred"), std::string::npos) << t->Describe();
}

TEST_F(RunStdioTest, RunWithTtyGivesAPtyOfTheJailsOwnDevpts) {
  RunOptions pty;
  pty.use_pty = true;
  auto r = RunCorral({"run", "-t", "--", "sh", "-c",
                      "test -t 0 && test -t 1 && echo ISATTY; tty; printf '\\033]0;raw\\007'; "
                      "exit 3"},
                     pty);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 3) << r->Describe();
  EXPECT_NE(r->out.find("ISATTY"), std::string::npos) << r->Describe();
  EXPECT_NE(r->out.find("/dev/pts/0"), std::string::npos) << r->Describe();
  // A terminal the operator asked for is raw: nothing is filtered.
  EXPECT_NE(r->out.find("\x1b]0;raw\x07"), std::string::npos) << r->Describe();
}

TEST_F(RunStdioTest, ExecItIsARealInteractiveTerminal) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  std::string name = CreateSandbox();
  std::string driver = SourceDir() + "/tests/integration/tty_driver.py";
  auto r = RunProgram("/usr/bin/python3", {driver, CorralBinary(), "exec", "-it", name, "--",
                                           "bash", "--norc", "--noprofile", "-i"});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  auto j = nlohmann::json::parse(r->out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r->Describe();
  std::string output = j.value("output", "");
  EXPECT_TRUE(j.value("first", false)) << output;
  EXPECT_TRUE(j.value("second", false)) << output;
  auto between = [&](const std::string& a, const std::string& b) {
    size_t s = output.find(a), e = output.find(b);
    return s == std::string::npos || e == std::string::npos || e < s ? "" : output.substr(s, e - s);
  };
  std::string first = between("<R1", "R1>"), second = between("<R2", "R2>");
  EXPECT_NE(first.find("/dev/pts/0"), std::string::npos) << output;
  EXPECT_NE(first.find("31 101"), std::string::npos) << output;
  EXPECT_NE(first.find("ISATTY"), std::string::npos) << output;
  EXPECT_NE(second.find("41 121"), std::string::npos) << output;
  EXPECT_TRUE(j.value("raw_while_running", false)) << output;
  EXPECT_EQ(j.value("exit_code", -1), 7) << output;
  EXPECT_TRUE(j.value("restored", false)) << output;
}

// SIGTERM to corral mid-session: the jail is stopped and the terminal restored.
TEST_F(RunStdioTest, ATerminalIsRestoredWhenCorralIsStopped) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  std::string driver = SourceDir() + "/tests/integration/tty_driver.py";
  auto r = RunProgram("/usr/bin/python3", {driver, "--sigterm", CorralBinary(), "run", "-it", "--",
                                           "bash", "--norc", "--noprofile", "-i"});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  auto j = nlohmann::json::parse(r->out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r->Describe();
  std::string output = j.value("output", "");
  EXPECT_TRUE(j.value("first", false)) << output;
  EXPECT_TRUE(j.value("raw_while_running", false)) << output;
  EXPECT_EQ(j.value("exit_code", -1), 143) << output;  // stopped by SIGTERM, as corral says
  EXPECT_TRUE(j.value("restored", false)) << output;
}

// `corral tool` prints what the sandbox wrote (a file's content here): on a terminal
// through the same filter, elsewhere byte for byte.
TEST_F(RunStdioTest, ToolOutputOnATerminalIsFilteredToo) {
  TempDir base;
  TempDir runtime;
  RunOptions options;
  options.env = {"CORRAL_RUNTIME_DIR=" + runtime.path()};
  auto tool = [&](const std::string& name, const std::string& args, bool on_pty) {
    RunOptions o = options;
    o.use_pty = on_pty;
    return RunCorral({"tool", name, "--provider", "local", "--base-dir", base.path(), "--thread",
                      "t1", "--args", args},
                     o);
  };
  const std::string file = R"("path":"/mnt/user-data/workspace/f.txt")";
  auto w = tool("write_file", "{" + file + R"(,"content":"a\u001b]52;c;QQ==\u0007b\n"})", false);
  ASSERT_TRUE(w && w->exit_code == 0) << (w ? w->Describe() : w.error().message());
  auto raw = tool("read_file", "{" + file + "}", false);
  ASSERT_TRUE(raw) << raw.error().message();
  EXPECT_NE(raw->out.find("a\x1b]52;c;QQ==\x07"
                          "b"),
            std::string::npos)
      << raw->Describe();
  auto shown = tool("read_file", "{" + file + "}", true);
  ASSERT_TRUE(shown) << shown.error().message();
  EXPECT_NE(shown->out.find("ab"), std::string::npos) << shown->Describe();
  EXPECT_EQ(shown->out.find("\x1b]"), std::string::npos) << shown->Describe();
}

TEST_F(RunStdioTest, TtyAndJsonAreRefusedTogether) {
  auto r = RunCorral({"run", "-t", "--json", "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("-t and --json"), std::string::npos) << r->Describe();
}

}  // namespace
}  // namespace corral::test
