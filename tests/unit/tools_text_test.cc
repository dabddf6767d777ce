// Pure helpers of the tool layer: truncation notices, glob matching, ignore patterns,
// line matching, line ranges, secret redaction, id validation, provider config.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "runtime/spec/provider_config.h"
#include "tools/audit_log.h"
#include "tools/providers/aio_sandbox.h"
#include "tools/providers/sandbox.h"
#include "tools/providers/sandbox_fileops.h"
#include "tools/providers/sandbox_search.h"
#include "tools/providers/thread_dirs.h"
#include "tools/text.h"

namespace corral {
namespace {

TEST(ToolsText, MiddleTruncationKeepsHeadAndTailWithinLimit) {
  std::string s(100, 'a');
  s += std::string(100, 'b');
  EXPECT_EQ(tools::MiddleTruncate(s, 0), s);
  EXPECT_EQ(tools::MiddleTruncate(s, 200), s);
  std::string t = tools::MiddleTruncate(s, 100);
  EXPECT_LE(t.size(), 100u);
  const std::string marker_prefix = "\n... [middle truncated: ";
  size_t m = t.find(marker_prefix);
  ASSERT_NE(m, std::string::npos) << t;
  EXPECT_EQ(t.substr(0, m), std::string(m, 'a'));
  EXPECT_EQ(t.back(), 'b');
  // skipped + kept == total
  size_t kept = t.size() - (t.find("] ...\n") + 6 - m);
  EXPECT_NE(t.find(": " + std::to_string(200 - kept) + " chars skipped] ...\n"), std::string::npos)
      << t;
}

TEST(ToolsText, HeadTruncationNoticeIsExact) {
  std::string s(1000, 'x');
  std::string t = tools::HeadTruncate(s, 200, tools::kReadFileHint);
  EXPECT_LE(t.size(), 200u);
  size_t kept = t.find('\n');
  EXPECT_EQ(t.substr(kept), "\n\n... [truncated: showing first " + std::to_string(kept) +
                                " of 1000 chars. Use start_line/end_line to read a specific "
                                "range] ...");
  EXPECT_EQ(tools::HeadTruncate(s, 1000, tools::kLsHint), s);
}

TEST(ToolsText, TruncationCountsCodePoints) {
  std::string s;
  for (int i = 0; i < 300; ++i) s += "é";
  EXPECT_EQ(tools::CharCount(s), 300u);
  std::string t = tools::HeadTruncate(s, 200, tools::kLsHint);
  EXPECT_TRUE(runtime::LooksLikeText(t));
  EXPECT_LE(tools::CharCount(t), 200u);
}

TEST(SandboxSearch, GlobIsRightAnchoredWithDoubleStar) {
  using runtime::GlobMatches;
  EXPECT_TRUE(GlobMatches("*.py", "a.py"));
  EXPECT_TRUE(GlobMatches("*.py", "src/deep/a.py"));
  EXPECT_TRUE(GlobMatches("**/*.py", "a.py"));
  EXPECT_TRUE(GlobMatches("src/**/*.py", "src/x/y/a.py"));
  EXPECT_TRUE(GlobMatches("src/*.py", "src/a.py"));
  EXPECT_FALSE(GlobMatches("src/*.py", "src/x/a.py"));
  EXPECT_FALSE(GlobMatches("*.py", "a.pyc"));
  EXPECT_FALSE(GlobMatches("/src/*.py", "x/src/a.py"));
}

TEST(SandboxSearch, IgnorePatterns) {
  for (const char* n : {".git", "node_modules", "__pycache__", "x.log", "pkg.egg-info", "a~"}) {
    EXPECT_TRUE(runtime::IsIgnoredName(n)) << n;
  }
  for (const char* n : {"src", "main.py", "README.md", "gitignore"}) {
    EXPECT_FALSE(runtime::IsIgnoredName(n)) << n;
  }
}

TEST(SandboxSearch, LineMatcherModes) {
  auto ci = runtime::LineMatcher::Create("fo+", false, false);
  ASSERT_TRUE(ci);
  EXPECT_TRUE(ci->Matches("xFOOy"));
  auto cs = runtime::LineMatcher::Create("fo+", false, true);
  EXPECT_FALSE(cs->Matches("FOO"));
  auto lit = runtime::LineMatcher::Create("a.b", true, false);
  EXPECT_TRUE(lit->Matches("xA.By"));
  EXPECT_FALSE(lit->Matches("axb"));
  auto bad = runtime::LineMatcher::Create("(", false, false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, runtime::SandboxErrc::kInvalidRegex);
  EXPECT_EQ(runtime::GrepSummary(std::string(250, 'q')), std::string(200, 'q') + "...");
}

TEST(SandboxFileOps, SliceLinesIsOneBasedInclusive) {
  const std::string c = "1\n2\n3\n4";
  EXPECT_EQ(runtime::SliceLines(c, 2, 3), "2\n3\n");
  EXPECT_EQ(runtime::SliceLines(c, 3, std::nullopt), "3\n4");
  EXPECT_EQ(runtime::SliceLines(c, std::nullopt, 1), "1\n");
  EXPECT_EQ(runtime::SliceLines(c, 9, 10), "");
  EXPECT_FALSE(runtime::LooksLikeText(std::string("a\0b", 3)));
  EXPECT_FALSE(runtime::LooksLikeText("\xff\xfe"));
}

TEST(SandboxText, CommandFormatting) {
  using runtime::FormatCommandText;
  EXPECT_EQ(FormatCommandText("", "", 0, std::nullopt), "(no output)");
  EXPECT_EQ(FormatCommandText("o\n", "e\n", 2, std::nullopt), "o\n\nStd Error:\ne\n\nExit Code: 2");
  EXPECT_EQ(FormatCommandText("", "e", 0, std::nullopt), "e");
  EXPECT_EQ(FormatCommandText("", "", -9, 1.5).rfind("Command timed out after 1.5 seconds", 0), 0u);
  EXPECT_EQ(runtime::SecondsText(1), "1 second");
  EXPECT_EQ(runtime::SecondsText(600), "600 seconds");
}

TEST(SandboxText, RedactsLongestFirst) {
  EXPECT_EQ(runtime::RedactSecrets("x abcdefgh abcdefghij y", {"abcdefgh", "abcdefghij"}),
            "x [redacted] [redacted] y");
}

TEST(ThreadDirs, IdsAndLayout) {
  EXPECT_TRUE(runtime::IsValidThreadId("abc_DEF-123"));
  EXPECT_FALSE(runtime::IsValidThreadId(std::string(65, 'a')));
  EXPECT_FALSE(runtime::IsValidThreadId("a/b"));
  EXPECT_FALSE(runtime::IsValidThreadId(".."));
  EXPECT_FALSE(runtime::IsValidUserId(""));
  EXPECT_TRUE(runtime::IsValidUserId(std::string(100, 'u')));
  auto d = runtime::ThreadDirsFor("/b", "u1", "t1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->workspace, "/b/users/u1/threads/t1/user-data/workspace");
  EXPECT_EQ(d->acp_workspace, "/b/users/u1/threads/t1/acp-workspace");
  auto bad = runtime::ThreadDirsFor("/b", "u1", "../x");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("thread_id"), std::string::npos);
  EXPECT_NE(runtime::JailSandboxName("/b", "a", "b-c"), runtime::JailSandboxName("/b", "a-b", "c"));
  EXPECT_EQ(runtime::JailSandboxName("/b", "a", "b").size(), 35u);
  // Two base directories never share a thread's sandbox (issue: th- names clashed).
  EXPECT_NE(runtime::JailSandboxName("/srv/a", "u", "t1"),
            runtime::JailSandboxName("/srv/b", "u", "t1"));
}

TEST(ProviderConfig, DeerFlowKeysParse) {
  YAML::Node root = YAML::Load(R"(
sandbox:
  use: deerflow.sandbox.local:LocalSandboxProvider
  allow_host_bash: true
  bash_output_max_chars: 100
  read_file_output_max_chars: 200
  ls_output_max_chars: 300
  bash_command_timeout: 5
  replicas: 2
  idle_timeout: 0
  warm: 3
  image: ignored-aio-image
  mounts:
    - {host_path: /opt/data, container_path: /mnt/data, read_only: false}
  environment: {API_TOKEN: abcdefgh12}
skills:
  path: /srv/skills
  container_path: /mnt/skills
)");
  runtime::ProviderConfig c;
  auto st = runtime::LoadProviderConfig(root["sandbox"], root["skills"], &c);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(c.use, runtime::ProviderKind::kLocal);
  EXPECT_TRUE(c.allow_host_bash);
  EXPECT_EQ(c.bash_output_max_chars, 100);
  EXPECT_EQ(c.ls_output_max_chars, 300);
  EXPECT_EQ(c.replicas, 2);
  EXPECT_EQ(c.idle_timeout, 0);
  EXPECT_EQ(c.warm, 3);
  ASSERT_EQ(c.mounts.size(), 1u);
  EXPECT_FALSE(c.mounts[0].read_only);
  EXPECT_EQ(*c.skills_path, "/srv/skills");
  EXPECT_EQ(runtime::SecretValues(c), std::vector<std::string>{"abcdefgh12"});
}

TEST(ProviderConfig, BadValuesNamed) {
  YAML::Node root = YAML::Load(R"(
sandbox:
  use: docker
  replicas: 0
  warm: 65
  colour: blue
  mounts:
    - {host_path: rel, container_path: /mnt/user-data/x}
)");
  runtime::ProviderConfig c;
  auto st = runtime::LoadProviderConfig(root["sandbox"], root["skills"], &c);
  ASSERT_FALSE(st);
  const std::string& m = st.error().message();
  for (const char* want :
       {"sandbox.use", "sandbox.replicas: must be > 0", "sandbox.colour: unknown key",
        "sandbox.warm: must be between 0 and 64 (got 65)",
        "sandbox.mounts[0].host_path: must be absolute",
        "sandbox.mounts[0].container_path: is reserved"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
  }
}

TEST(ProviderConfig, IdleActionPauseAndItsTimeouts) {
  runtime::ProviderConfig d;
  EXPECT_EQ(d.idle_action, runtime::ProviderConfig::IdleAction::kDestroy);
  EXPECT_TRUE(d.resume_on_call);
  YAML::Node ok = YAML::Load(
      "sandbox: {idle_timeout: 60, idle_action: pause, paused_timeout: 3600, "
      "resume_on_call: false}");
  runtime::ProviderConfig c;
  ASSERT_TRUE(runtime::LoadProviderConfig(ok["sandbox"], ok["skills"], &c));
  EXPECT_EQ(c.idle_action, runtime::ProviderConfig::IdleAction::kPause);
  EXPECT_EQ(c.paused_timeout, 3600);
  EXPECT_FALSE(c.resume_on_call);
  YAML::Node never =
      YAML::Load("sandbox: {idle_timeout: 60, idle_action: pause, paused_timeout: 0}");
  runtime::ProviderConfig n;
  EXPECT_TRUE(runtime::LoadProviderConfig(never["sandbox"], never["skills"], &n)) << "0: never";

  YAML::Node bad =
      YAML::Load("sandbox: {idle_timeout: 600, idle_action: hibernate, paused_timeout: -1}");
  runtime::ProviderConfig b;
  auto st = runtime::LoadProviderConfig(bad["sandbox"], bad["skills"], &b);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find(
                "sandbox.idle_action: must be destroy or pause (got \"hibernate\")"),
            std::string::npos)
      << st.error().message();
  EXPECT_NE(st.error().message().find("sandbox.paused_timeout: must be >= 0"), std::string::npos);
  YAML::Node shorter =
      YAML::Load("sandbox: {idle_timeout: 600, idle_action: pause, paused_timeout: 300}");
  runtime::ProviderConfig s2;
  st = runtime::LoadProviderConfig(shorter["sandbox"], shorter["skills"], &s2);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find(
                "sandbox.paused_timeout: must be longer than sandbox.idle_timeout (600 s)"),
            std::string::npos)
      << st.error().message();
  YAML::Node no_idle = YAML::Load("sandbox: {idle_timeout: 0, idle_action: pause}");
  runtime::ProviderConfig s3;
  st = runtime::LoadProviderConfig(no_idle["sandbox"], no_idle["skills"], &s3);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("sandbox.idle_action: pause needs sandbox.idle_timeout > 0"),
            std::string::npos)
      << st.error().message();
}

TEST(ProviderConfig, AioNeedsAServerAndReadsItsKeyFromTheEnvironment) {
  YAML::Node missing =
      YAML::Load("sandbox: {use: deerflow.community.aio_sandbox:AioSandboxProvider}");
  runtime::ProviderConfig c;
  auto st = runtime::LoadProviderConfig(missing["sandbox"], missing["skills"], &c);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("sandbox.provisioner_url: the aio provider needs"),
            std::string::npos)
      << st.error().message();

  ::setenv("CORRAL_TEST_PROVISIONER_KEY", "k-123", 1);
  YAML::Node ok = YAML::Load(R"(
sandbox:
  use: deerflow.community.aio_sandbox:AioSandboxProvider
  provisioner_url: http://127.0.0.1:8002
  provisioner_api_key: $CORRAL_TEST_PROVISIONER_KEY
)");
  runtime::ProviderConfig d;
  st = runtime::LoadProviderConfig(ok["sandbox"], ok["skills"], &d);
  ::unsetenv("CORRAL_TEST_PROVISIONER_KEY");
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(d.use, runtime::ProviderKind::kAio);
  EXPECT_EQ(d.provisioner_url, "http://127.0.0.1:8002");
  EXPECT_EQ(d.provisioner_api_key, "k-123");

  YAML::Node bad = YAML::Load("sandbox: {use: aio, aio_url: 'ftp://x'}");
  runtime::ProviderConfig e;
  st = runtime::LoadProviderConfig(bad["sandbox"], bad["skills"], &e);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("sandbox.aio_url: must be an http:// or https:// URL"),
            std::string::npos);
}

TEST(AioProvider, Base64MatchesRfc4648) {
  EXPECT_EQ(runtime::Base64Encode(""), "");
  EXPECT_EQ(runtime::Base64Encode("f"), "Zg==");
  EXPECT_EQ(runtime::Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(runtime::Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(runtime::Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(runtime::Base64Encode(std::string("\xff\x00\xfe", 3)), "/wD+");
}

}  // namespace
}  // namespace corral
