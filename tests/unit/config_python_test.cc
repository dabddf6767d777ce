// The config file's python: section (runtime/spec/config_python.cc): defaults, every key,
// commands resolved to absolute paths when the file loads, and problems named by field path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/spec/config.h"
#include "tests/unit/config_text.h"

namespace corral::runtime {
namespace {

using ::testing::HasSubstr;

using config_text::kExamplePath;
using config_text::LoadError;

TEST(ConfigPython, ExampleFileSpellsOutTheDefaults) {
  JailSpec spec;
  spec.python.allowlist = {"x"};
  spec.python.scan.deny_calls.clear();
  Status s = LoadConfigFile(kExamplePath, &spec);
  ASSERT_TRUE(s) << s.error().message();
  // The file sets allowlist: [] and the full deny_calls list: back to the defaults.
  EXPECT_EQ(spec.python.scan.deny_calls, PythonSpec{}.scan.deny_calls);
  EXPECT_EQ(spec.python.scan, PythonSpec{}.scan);
  EXPECT_EQ(spec.python.interpreter, PythonSpec{}.interpreter);
  EXPECT_EQ(spec.python.command_output_limit_bytes, PythonSpec{}.command_output_limit_bytes);
}

TEST(ConfigPython, EveryKeyOverrides) {
  JailSpec spec;
  Status s = LoadConfigText(R"(
python:
  interpreter: /usr/bin/python3.11
  scan: {mode: warn, deny_calls: [os.system], deny_modules: [ctypes, os.path],
         deny_paths: [/srv/secret], deny_environ: false}
  allowlist: [math, json]
  commands: [sh, /bin/true]
  command_output_limit: 64k
)",
                            "t.yaml", &spec);
  ASSERT_TRUE(s) << s.error().message();
  const PythonSpec& p = spec.python;
  EXPECT_EQ(p.interpreter, "/usr/bin/python3.11");
  EXPECT_EQ(p.scan.mode, ScanMode::kWarn);
  EXPECT_EQ(p.scan.deny_calls, std::vector<std::string>{"os.system"});
  EXPECT_EQ(p.scan.deny_modules, (std::vector<std::string>{"ctypes", "os.path"}));
  EXPECT_EQ(p.scan.deny_paths, std::vector<std::string>{"/srv/secret"});
  EXPECT_FALSE(p.scan.deny_environ);
  EXPECT_EQ(p.allowlist, (std::vector<std::string>{"math", "json"}));
  ASSERT_EQ(p.commands.size(), 2u);
  EXPECT_EQ(p.commands[0].first, "sh");
  EXPECT_EQ(p.commands[0].second.front(), '/');  // resolved in the search path
  EXPECT_THAT(p.commands[0].second, testing::EndsWith("/sh"));
  EXPECT_EQ(p.commands[1], (std::pair<std::string, std::string>{"true", "/bin/true"}));
  EXPECT_EQ(p.command_output_limit_bytes, 64 * 1024);
}

TEST(ConfigPython, DefaultDenyCallsAreTheIssuesList) {
  const std::vector<std::string> expected = {"os.system",     "os.popen",
                                             "os.exec*",      "os.spawn*",
                                             "subprocess.*",  "pty.spawn",
                                             "pickle.loads",  "pickle.load",
                                             "marshal.loads", "eval",
                                             "exec",          "compile",
                                             "__import__",    "importlib.import_module"};
  EXPECT_EQ(PythonSpec{}.scan.deny_calls, expected);
  EXPECT_EQ(PythonSpec{}.scan.mode, ScanMode::kDeny);
  EXPECT_TRUE(PythonSpec{}.allowlist.empty());
}

TEST(ConfigPython, ProblemsNameTheFieldPath) {
  EXPECT_THAT(LoadError("python: {nope: 1}"), HasSubstr("python.nope: unknown key"));
  EXPECT_THAT(LoadError("python: {scan: {mode: maybe}}"),
              HasSubstr("python.scan.mode: expected deny, warn or off, got \"maybe\""));
  EXPECT_THAT(LoadError("python: {scan: {deny_environ: 3}}"),
              HasSubstr("python.scan.deny_environ: expected true or false"));
  EXPECT_THAT(LoadError("python: {allowlist: json}"),
              HasSubstr("python.allowlist: expected a list of strings"));
  EXPECT_THAT(LoadError("python: {allowlist: [json, \"not a module\"]}"),
              HasSubstr("python.allowlist[1]: expected a module name"));
  EXPECT_THAT(LoadError("python: {scan: {deny_paths: [etc/shadow]}}"),
              HasSubstr("python.scan.deny_paths[0]: must be an absolute path"));
  EXPECT_THAT(LoadError("python: {interpreter: python3}"),
              HasSubstr("python.interpreter: must be an absolute path inside the jail"));
}

TEST(ConfigPython, CommandsMustBeFoundAndExecutable) {
  EXPECT_THAT(LoadError("python:\n  commands: [true, corral-no-such-tool]\n"),
              HasSubstr("python.commands[1]: \"corral-no-such-tool\": not found in "
                        "/usr/local/bin:/usr/bin:/bin"));
  EXPECT_THAT(LoadError("python: {commands: [/etc/passwd]}"),
              HasSubstr("python.commands[0]: \"/etc/passwd\": /etc/passwd is not an executable"));
  EXPECT_THAT(LoadError("python: {commands: [/nope/tool]}"),
              HasSubstr("python.commands[0]: \"/nope/tool\": /nope/tool does not exist"));
  EXPECT_THAT(LoadError("python: {commands: [bin/true]}"),
              HasSubstr("python.commands[0]: \"bin/true\": a path must be absolute"));
  EXPECT_THAT(LoadError("python: {commands: [true, /bin/true]}"),
              HasSubstr("python.commands[1]: a second command named \"true\""));
}

}  // namespace
}  // namespace corral::runtime
