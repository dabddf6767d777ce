#include "runtime/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/files.h"
#include "jail/seccomp.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// Every field of a JailSpec, one per line, so a mismatch shows as a readable diff.
// Keep in step with runtime/spec.h.
std::string Dump(const JailSpec& s) {
  std::ostringstream o;
  auto opt = [](const std::optional<std::string>& v) { return v ? "'" + *v + "'" : "null"; };
  o << "argv:";
  for (const auto& a : s.argv) o << " '" << a << "'";
  o << "\nenv:";
  for (const auto& [k, v] : s.env) o << " " << k << "='" << v << "'";
  o << "\nrootfs: " << opt(s.rootfs) << "\nskills_dir: " << opt(s.skills_dir)
    << "\nuser_data_dir: " << opt(s.user_data_dir)
    << "\nacp_workspace_dir: " << opt(s.acp_workspace_dir) << "\nmounts:";
  for (const auto& m : s.mounts) {
    o << " {" << m.host_path << " -> " << m.container_path << (m.read_only ? " ro" : " rw")
      << "}";
  }
  o << "\nworkdir: " << opt(s.workdir) << "\nhostname: " << s.hostname << "\nuid: " << s.uid
    << "\ngid: " << s.gid << "\nnamespaces: " << s.namespaces.pid << s.namespaces.uts
    << s.namespaces.ipc << s.namespaces.net << s.namespaces.cgroup
    << "\nseccomp: " << s.seccomp_profile;
  const LimitsSpec& l = s.limits;
  o << "\nlimits: memory=" << l.memory_bytes << " cpus=" << l.cpus << " pids=" << l.pids
    << " timeout=" << l.timeout_seconds << " cpu_time="
    << (l.cpu_time_seconds ? std::to_string(*l.cpu_time_seconds) : "null")
    << " output=" << l.output_limit_bytes << " tmp=" << l.tmp_size_bytes
    << " fsize=" << l.file_size_bytes << " nofile=" << l.open_files
    << " grace=" << l.kill_grace_seconds;
  o << "\ncgroups: " << s.cgroups.driver << " " << s.cgroups.parent;
  o << "\nunsafe: " << s.unsafe.allow_root << s.unsafe.allow_missing_limits
    << s.unsafe.allow_unconfined_seccomp << s.unsafe.host_network << "\n";
  return o.str();
}

const std::string kExamplePath = std::string(CORRAL_SOURCE_DIR) + "/config.example.yaml";

// Sets every key to something other than its default.
const char* const kEveryKey = R"(
rootfs: /srv/root
hostname: box-1.example
user: {uid: 2000, gid: 3000}
workdir: /work
env: {A: "1", B_2: two words}
namespaces: {pid: false, uts: false, ipc: false, net: false, cgroup: false}
skills_dir: /srv/skills
user_data_dir: /srv/data
acp_workspace_dir: /srv/acp
mounts:
  - {host_path: /srv/x, container_path: /x}
  - {host_path: /srv/y, container_path: /y, read_only: false}
seccomp: {profile: strict}
limits: {memory: 1.5g, cpus: 0.5, pids: 64, timeout: 30.5, cpu_time: 10,
         output: 64k, tmp_size: 32MiB, file_size: 2G, open_files: 256, kill_grace: 0.25}
cgroups: {driver: v1, parent: /jails/corral}
unsafe: {allow_root: true, allow_missing_limits: true, allow_unconfined_seccomp: true,
         host_network: true}
)";

std::string LoadError(const std::string& yaml) {
  JailSpec spec;
  Status s = LoadConfigText(yaml, "t.yaml", &spec);
  if (s) return "(loaded without error)";
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  return s.error().message();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ConfigLoad, ExampleFileYieldsExactlyTheDefaults) {
  JailSpec spec;
  Status s = LoadConfigFile(kExamplePath, &spec);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(Dump(spec), Dump(JailSpec{}));
}

TEST(ConfigLoad, ExampleFileSetsEveryKeyBackToItsDefault) {
  // Loaded over a spec where everything differs, the example must restore every default:
  // proof that it spells out each key rather than relying on omissions.
  JailSpec spec;
  ASSERT_TRUE(LoadConfigText(kEveryKey, "every", &spec));
  ASSERT_NE(Dump(spec), Dump(JailSpec{}));
  Status s = LoadConfigFile(kExamplePath, &spec);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(Dump(spec), Dump(JailSpec{}));
}

TEST(ConfigLoad, ExampleFileMentionsEveryKnownKey) {
  Result<std::string> text = ReadFile(kExamplePath);
  ASSERT_TRUE(text);
  const std::vector<std::string> paths = ConfigKeyPaths();
  EXPECT_GT(paths.size(), 30u);
  for (const std::string& path : paths) {
    if (path == "env.*") continue;
    const size_t cut = path.find_last_of(".]");
    const std::string leaf = cut == std::string::npos ? path : path.substr(cut + 1);
    EXPECT_THAT(*text, HasSubstr(leaf + ":")) << "config.example.yaml does not document " << path;
  }
}

TEST(ConfigLoad, EveryKeyOverrides) {
  JailSpec spec;
  Status s = LoadConfigText(kEveryKey, "every", &spec);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(spec.rootfs, "/srv/root");
  EXPECT_EQ(spec.hostname, "box-1.example");
  EXPECT_EQ(spec.uid, 2000u);
  EXPECT_EQ(spec.gid, 3000u);
  EXPECT_EQ(spec.workdir, "/work");
  EXPECT_THAT(spec.env, ElementsAre(std::make_pair(std::string("A"), std::string("1")),
                                    std::make_pair(std::string("B_2"), std::string("two words"))));
  EXPECT_FALSE(spec.namespaces.pid);
  EXPECT_FALSE(spec.namespaces.uts);
  EXPECT_FALSE(spec.namespaces.ipc);
  EXPECT_FALSE(spec.namespaces.net);
  EXPECT_FALSE(spec.namespaces.cgroup);
  EXPECT_EQ(spec.skills_dir, "/srv/skills");
  EXPECT_EQ(spec.user_data_dir, "/srv/data");
  EXPECT_EQ(spec.acp_workspace_dir, "/srv/acp");
  ASSERT_EQ(spec.mounts.size(), 2u);
  EXPECT_EQ(spec.mounts[0].host_path, "/srv/x");
  EXPECT_EQ(spec.mounts[0].container_path, "/x");
  EXPECT_TRUE(spec.mounts[0].read_only);
  EXPECT_EQ(spec.mounts[1].host_path, "/srv/y");
  EXPECT_FALSE(spec.mounts[1].read_only);
  EXPECT_EQ(spec.seccomp_profile, "strict");
  EXPECT_EQ(spec.limits.memory_bytes, 3 * kGiB / 2);
  EXPECT_EQ(spec.limits.cpus, 0.5);
  EXPECT_EQ(spec.limits.pids, 64);
  EXPECT_EQ(spec.limits.timeout_seconds, 30.5);
  EXPECT_EQ(spec.limits.cpu_time_seconds, 10);
  EXPECT_EQ(spec.limits.output_limit_bytes, 64 * 1024);
  EXPECT_EQ(spec.limits.tmp_size_bytes, 32 * kMiB);
  EXPECT_EQ(spec.limits.file_size_bytes, 2 * kGiB);
  EXPECT_EQ(spec.limits.open_files, 256);
  EXPECT_EQ(spec.limits.kill_grace_seconds, 0.25);
  EXPECT_EQ(spec.cgroups.driver, "v1");
  EXPECT_EQ(spec.cgroups.parent, "/jails/corral");
  EXPECT_TRUE(spec.unsafe.allow_root);
  EXPECT_TRUE(spec.unsafe.allow_missing_limits);
  EXPECT_TRUE(spec.unsafe.allow_unconfined_seccomp);
  EXPECT_TRUE(spec.unsafe.host_network);
}

TEST(ConfigLoad, KeysNotInTheFileKeepTheCallersValues) {
  JailSpec spec;
  spec.hostname = "from-caller";
  spec.limits.pids = 99;
  spec.env = {{"KEEP", "1"}};
  ASSERT_TRUE(LoadConfigText("limits: {memory: 1g}\n", "t", &spec));
  EXPECT_EQ(spec.hostname, "from-caller");
  EXPECT_EQ(spec.limits.pids, 99);
  EXPECT_EQ(spec.limits.memory_bytes, kGiB);
  EXPECT_EQ(spec.env.size(), 1u);
}

TEST(ConfigLoad, EmptyFilesAndEmptySectionsSetNothing) {
  for (const char* yaml : {"", "# just a comment\n", "limits:\nunsafe:\n", "---\n"}) {
    JailSpec spec;
    Status s = LoadConfigText(yaml, "t", &spec);
    ASSERT_TRUE(s) << yaml << ": " << s.error().message();
    EXPECT_EQ(Dump(spec), Dump(JailSpec{})) << yaml;
  }
}

TEST(ConfigLoad, NullUnsetsOptionalKeys) {
  JailSpec spec;
  spec.rootfs = "/r";
  spec.workdir = "/w";
  spec.limits.cpu_time_seconds = 5;
  ASSERT_TRUE(LoadConfigText("rootfs: null\nworkdir: ~\nlimits: {cpu_time: null}\n", "t", &spec));
  EXPECT_EQ(spec.rootfs, std::nullopt);
  EXPECT_EQ(spec.workdir, std::nullopt);
  EXPECT_EQ(spec.limits.cpu_time_seconds, std::nullopt);
}

TEST(ConfigLoad, ListsAndMapsReplaceTheCurrentValue) {
  JailSpec spec;
  spec.mounts = {{"/a", "/a", true}};
  spec.env = {{"OLD", "1"}};
  ASSERT_TRUE(LoadConfigText("mounts: []\nenv: {NEW: x}\n", "t", &spec));
  EXPECT_THAT(spec.mounts, IsEmpty());
  ASSERT_EQ(spec.env.size(), 1u);
  EXPECT_EQ(spec.env[0].first, "NEW");
}

TEST(ConfigLoad, ReportsEveryProblemAtOnceWithKeyPathsAndLines) {
  const std::string message = LoadError(R"(hostnme: x
limits:
  memory: lots
  cpus: many
  pids: "12"
  output: 0
  timeout: -1
  memroy: 1g
user: {uid: -5, gid: 4294967295}
unsafe: {allow_root: yes}
mounts:
  - {host_path: /a}
  - /b:/c
  - {host_path: [x], container_path: /d, extra: 1}
env: {A: null}
seccomp: default
namespaces: {pid: true, pid: false}
)");
  EXPECT_THAT(Lines(message),
              ElementsAre(
                  StartsWith("t.yaml:1: hostnme: unknown key (did you mean hostname?); known "
                             "keys: rootfs, hostname,"),
                  "t.yaml:3: limits.memory: expected a size like 512m, got \"lots\"",
                  "t.yaml:4: limits.cpus: expected a number, got \"many\"",
                  "t.yaml:5: limits.pids: expected an integer, got the string \"12\"",
                  "t.yaml:6: limits.output: must be greater than 0 (got 0)",
                  "t.yaml:7: limits.timeout: must be at least 0 (got -1)",
                  StartsWith("t.yaml:8: limits.memroy: unknown key (did you mean memory?)"),
                  "t.yaml:9: user.uid: must be at least 0 (got -5)",
                  "t.yaml:9: user.gid: must be at most 4294967294 (got 4294967295)",
                  "t.yaml:10: unsafe.allow_root: expected true or false, got \"yes\"",
                  "t.yaml:12: mounts[0]: missing container_path",
                  "t.yaml:13: mounts[1]: expected a mapping, got \"/b:/c\"",
                  "t.yaml:14: mounts[2].host_path: expected a string, got a list",
                  StartsWith("t.yaml:14: mounts[2].extra: unknown key; known keys: host_path, "
                             "container_path, read_only"),
                  "t.yaml:15: env.A: expected a string, got null",
                  "t.yaml:16: seccomp: expected a mapping, got \"default\"",
                  "t.yaml:17: namespaces.pid: duplicate key"));
}

TEST(ConfigLoad, RejectsBadSizesWithTheirReason) {
  EXPECT_EQ(LoadError("limits: {tmp_size: 0.3k}"),
            "t.yaml:1: limits.tmp_size: size \"0.3k\" is not a whole number of bytes");
  EXPECT_EQ(LoadError("limits: {file_size: -1g}"),
            "t.yaml:1: limits.file_size: size \"-1g\" is negative");
  EXPECT_EQ(LoadError("limits: {memory: 99999999999g}"),
            "t.yaml:1: limits.memory: size \"99999999999g\" is too large (the limit is 8 EiB)");
  EXPECT_EQ(LoadError("limits: {memory: [1]}"),
            "t.yaml:1: limits.memory: expected a size like 512m, got a list");
}

TEST(ConfigLoad, RejectsNonFiniteAndOutOfRangeNumbers) {
  EXPECT_EQ(LoadError("limits: {cpus: .nan}"),
            "t.yaml:1: limits.cpus: expected a number, got \".nan\"");
  EXPECT_EQ(LoadError("limits: {timeout: .inf}"),
            "t.yaml:1: limits.timeout: expected a number, got \".inf\"");
  EXPECT_EQ(LoadError("limits: {cpus: 0}"), "t.yaml:1: limits.cpus: must be greater than 0 (got 0)");
  EXPECT_EQ(LoadError("limits: {pids: 99999999999999999999}"),
            "t.yaml:1: limits.pids: must be at most 9223372036854775807 "
            "(got 99999999999999999999)");
  EXPECT_EQ(LoadError("limits: {cpu_time: 0}"),
            "t.yaml:1: limits.cpu_time: must be at least 1 (got 0)");
  EXPECT_EQ(LoadError("limits: {open_files: 0x10}"),
            "t.yaml:1: limits.open_files: expected an integer, got \"0x10\"");
}

TEST(ConfigLoad, RejectsWrongShapesAtTheTop) {
  EXPECT_EQ(LoadError("- a\n- b\n"), "t.yaml: top level: expected a mapping, got a list");
  EXPECT_EQ(LoadError("a: 1\n---\nb: 2\n"), "t.yaml: expected one YAML document, found 2");
  EXPECT_THAT(LoadError("limits: {memory: 1g\n"), StartsWith("t.yaml:2:1: invalid YAML: "));
  EXPECT_EQ(LoadError("env: [A=1]"), "t.yaml:1: env: expected a mapping of NAME: value, got a list");
  EXPECT_EQ(LoadError("mounts: {a: b}"), "t.yaml:1: mounts: expected a list, got a mapping");
  EXPECT_EQ(LoadError("hostname: null"), "t.yaml:1: hostname: expected a string, got null");
}

TEST(ConfigLoad, FileErrorsNameThePath) {
  JailSpec spec;
  Status s = LoadConfigFile("/nonexistent/corral.yaml", &spec);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("/nonexistent/corral.yaml"));

  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("c.yaml", "limits: {pids: x}\n"));
  s = LoadConfigFile(dir.Join("c.yaml"), &spec);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            dir.Join("c.yaml") + ":1: limits.pids: expected an integer, got \"x\"");
}

// ---- Validate ----

JailSpec ValidSpec() {
  JailSpec spec;
  spec.argv = {"/bin/true"};
  return spec;
}

// Exactly one problem, for `field`; returns it for further checks.
std::string OneProblem(const JailSpec& spec, const std::string& field) {
  const std::vector<std::string> problems = Validate(spec);
  EXPECT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  if (problems.size() != 1) return "";
  EXPECT_THAT(problems[0], StartsWith(field + ": ")) << problems[0];
  return problems[0];
}

TEST(ConfigValidate, DefaultsWithACommandAreValid) {
  EXPECT_THAT(Validate(ValidSpec()), IsEmpty());
}

TEST(ConfigValidate, ExampleConfigWithACommandIsValid) {
  JailSpec spec;
  ASSERT_TRUE(LoadConfigFile(kExamplePath, &spec));
  spec.argv = {"bash", "-c", "true"};
  EXPECT_THAT(Validate(spec), IsEmpty());
}

TEST(ConfigValidate, Argv) {
  JailSpec spec = ValidSpec();
  spec.argv.clear();
  EXPECT_EQ(OneProblem(spec, "argv"), "argv: no command given (got an empty command)");
  spec.argv = {""};
  OneProblem(spec, "argv[0]");
  spec.argv = {"echo", std::string("a\0b", 3)};
  EXPECT_EQ(OneProblem(spec, "argv[1]"), "argv[1]: must not contain a NUL byte (got \"a\\0b\")");
}

TEST(ConfigValidate, Env) {
  JailSpec spec = ValidSpec();
  spec.env = {{"_OK1", "x"}, {"1BAD", "x"}};
  EXPECT_EQ(OneProblem(spec, "env[1].name"),
            "env[1].name: must match [A-Za-z_][A-Za-z0-9_]* (got \"1BAD\")");
  spec.env = {{"A-B", ""}};
  OneProblem(spec, "env[0].name");
  spec.env = {{"", ""}};
  OneProblem(spec, "env[0].name");
  spec.env = {{"A", std::string("x\0y", 3)}};
  OneProblem(spec, "env[0].value");
}

TEST(ConfigValidate, HostDirectories) {
  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("file", "x"));
  for (auto field : {&JailSpec::rootfs, &JailSpec::skills_dir, &JailSpec::user_data_dir,
                     &JailSpec::acp_workspace_dir}) {
    JailSpec spec = ValidSpec();
    spec.*field = dir.path();
    EXPECT_THAT(Validate(spec), IsEmpty());
    const std::string name = field == &JailSpec::rootfs           ? "rootfs"
                             : field == &JailSpec::skills_dir     ? "skills_dir"
                             : field == &JailSpec::user_data_dir  ? "user_data_dir"
                                                                  : "acp_workspace_dir";
    spec.*field = "relative/dir";
    EXPECT_EQ(OneProblem(spec, name), name + ": must be an absolute path (got \"relative/dir\")");
    spec.*field = dir.path() + "/../x";
    EXPECT_THAT(OneProblem(spec, name), HasSubstr("no \".\" or \"..\" components"));
    spec.*field = dir.path() + "//x";
    EXPECT_THAT(OneProblem(spec, name), HasSubstr("no empty components"));
    spec.*field = dir.path() + "/";
    EXPECT_THAT(OneProblem(spec, name), HasSubstr("no empty components"));
    spec.*field = dir.Join("missing");
    EXPECT_EQ(OneProblem(spec, name),
              name + ": does not exist on the host (got \"" + dir.Join("missing") + "\")");
    spec.*field = dir.Join("file");
    EXPECT_THAT(OneProblem(spec, name), HasSubstr("must be a directory"));
  }
  JailSpec spec = ValidSpec();
  spec.rootfs = "/";
  OneProblem(spec, "rootfs");
}

TEST(ConfigValidate, Workdir) {
  JailSpec spec = ValidSpec();
  spec.workdir = "/mnt/user-data/workspace";  // a container path: need not exist on the host
  EXPECT_THAT(Validate(spec), IsEmpty());
  spec.workdir = "work";
  OneProblem(spec, "workdir");
  spec.workdir = "/a/./b";
  OneProblem(spec, "workdir");
}

TEST(ConfigValidate, MountHostPaths) {
  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("file", "x"));
  JailSpec spec = ValidSpec();
  spec.mounts = {{dir.path(), "/a", true}, {dir.Join("file"), "/b", false}};
  EXPECT_THAT(Validate(spec), IsEmpty());
  spec.mounts[1].host_path = "file";
  OneProblem(spec, "mounts[1].host_path");
  spec.mounts[1].host_path = dir.Join("nope");
  EXPECT_THAT(OneProblem(spec, "mounts[1].host_path"), HasSubstr("does not exist on the host"));
}

TEST(ConfigValidate, MountContainerPaths) {
  test::TempDir dir;
  JailSpec spec = ValidSpec();
  spec.mounts = {{dir.path(), "/data", true}};
  for (const char* ok : {"/data", "/mnt/data", "/procfs", "/devices", "/tmpx", "/mnt/skills2",
                         "/usr/local/lib/x", "/home/sandbox/in"}) {
    spec.mounts[0].container_path = ok;
    EXPECT_THAT(Validate(spec), IsEmpty()) << ok;
  }
  for (const char* bad :
       {"/", "/proc", "/proc/sys", "/dev", "/dev/shm", "/sys", "/sys/fs/cgroup", "/tmp",
        "/tmp/x", "/mnt/skills", "/mnt/skills/a", "/mnt/user-data", "/mnt/user-data/workspace",
        "/mnt/acp-workspace", "/mnt", "relative", "/a/../b", "/a//b", "/a/"}) {
    spec.mounts[0].container_path = bad;
    OneProblem(spec, "mounts[0].container_path");
  }
  spec.mounts[0].container_path = "/tmp";
  EXPECT_THAT(OneProblem(spec, "mounts[0].container_path"), HasSubstr("reserved"));
  spec.mounts[0].container_path = "/mnt";
  EXPECT_THAT(OneProblem(spec, "mounts[0].container_path"), HasSubstr("would cover /mnt/skills"));
}

TEST(ConfigValidate, DuplicateContainerPaths) {
  test::TempDir dir;
  JailSpec spec = ValidSpec();
  spec.mounts = {{dir.path(), "/a", true}, {dir.path(), "/b", true}, {dir.path(), "/a", false}};
  EXPECT_EQ(OneProblem(spec, "mounts[2].container_path"),
            "mounts[2].container_path: is also the container_path of mounts[0] (got \"/a\")");
}

TEST(ConfigValidate, Hostname) {
  JailSpec spec = ValidSpec();
  for (const std::string ok : {"sandbox", "a", "my-host.example.org", "x1", "1x",
                               std::string(63, 'a'), std::string(63, 'a') + ".b"}) {
    spec.hostname = ok;
    EXPECT_THAT(Validate(spec), IsEmpty()) << ok;
  }
  for (const std::string bad : {std::string(), std::string(64, 'a'),
                                std::string(63, 'a') + ".bc", std::string("-a"),
                                std::string("a-"), std::string("a..b"), std::string(".a"),
                                std::string("a."), std::string("a_b"), std::string("a b")}) {
    spec.hostname = bad;
    OneProblem(spec, "hostname");
  }
}

TEST(ConfigValidate, RootNeedsAllowRoot) {
  JailSpec spec = ValidSpec();
  spec.uid = 0;
  EXPECT_EQ(OneProblem(spec, "user.uid"),
            "user.uid: 0 (root) needs unsafe.allow_root: true (got 0)");
  spec.uid = 1000;
  spec.gid = 0;
  OneProblem(spec, "user.gid");
  spec.uid = 0;
  spec.unsafe.allow_root = true;
  EXPECT_THAT(Validate(spec), IsEmpty());
  spec.uid = std::numeric_limits<uint32_t>::max();
  OneProblem(spec, "user.uid");
}

TEST(ConfigValidate, SeccompProfile) {
  JailSpec spec = ValidSpec();
  const std::vector<std::string> builtins = jail::BuiltinSeccompProfileNames();
  EXPECT_THAT(builtins, ::testing::Contains("default"));
  for (const std::string& name : builtins) {
    spec.seccomp_profile = name;
    EXPECT_THAT(Validate(spec), IsEmpty()) << name;
  }
  spec.seccomp_profile = "nonesuch";
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"), HasSubstr("must be one of default, "));
  spec.seccomp_profile = "unconfined";
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"),
              HasSubstr("needs unsafe.allow_unconfined_seccomp: true"));
  spec.unsafe.allow_unconfined_seccomp = true;
  EXPECT_THAT(Validate(spec), IsEmpty());

  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("p.json", "{}"));
  spec.seccomp_profile = dir.Join("p.json");
  EXPECT_THAT(Validate(spec), IsEmpty());
  spec.seccomp_profile = dir.Join("missing.json");
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"), HasSubstr("does not exist"));
  spec.seccomp_profile = dir.path();
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"), HasSubstr("must be a regular file"));
}

TEST(ConfigValidate, HostNetworkNeedsUnsafe) {
  JailSpec spec = ValidSpec();
  spec.namespaces.net = false;
  OneProblem(spec, "namespaces.net");
  spec.unsafe.host_network = true;
  EXPECT_THAT(Validate(spec), IsEmpty());
}

TEST(ConfigValidate, Limits) {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  struct Case {
    const char* field;
    void (*bad)(LimitsSpec&);
    void (*edge_ok)(LimitsSpec&);
  } cases[] = {
      {"limits.memory", [](LimitsSpec& l) { l.memory_bytes = 4 * kMiB - 1; },
       [](LimitsSpec& l) { l.memory_bytes = 4 * kMiB; }},
      {"limits.cpus", [](LimitsSpec& l) { l.cpus = 0; }, [](LimitsSpec& l) { l.cpus = 0.01; }},
      {"limits.cpus", [](LimitsSpec& l) { l.cpus = NAN; }, nullptr},
      {"limits.pids", [](LimitsSpec& l) { l.pids = 1; }, [](LimitsSpec& l) { l.pids = 2; }},
      {"limits.timeout", [](LimitsSpec& l) { l.timeout_seconds = -1; },
       [](LimitsSpec& l) { l.timeout_seconds = 0; }},
      {"limits.timeout", [](LimitsSpec& l) { l.timeout_seconds = INFINITY; }, nullptr},
      {"limits.cpu_time", [](LimitsSpec& l) { l.cpu_time_seconds = 0; },
       [](LimitsSpec& l) { l.cpu_time_seconds = 1; }},
      {"limits.output", [](LimitsSpec& l) { l.output_limit_bytes = 0; },
       [](LimitsSpec& l) { l.output_limit_bytes = 1; }},
      {"limits.tmp_size", [](LimitsSpec& l) { l.tmp_size_bytes = kMiB - 1; },
       [](LimitsSpec& l) { l.tmp_size_bytes = kMiB; }},
      {"limits.file_size", [](LimitsSpec& l) { l.file_size_bytes = 0; },
       [](LimitsSpec& l) { l.file_size_bytes = 1; }},
      {"limits.open_files", [](LimitsSpec& l) { l.open_files = 15; },
       [](LimitsSpec& l) { l.open_files = 16; }},
      {"limits.kill_grace", [](LimitsSpec& l) { l.kill_grace_seconds = -0.5; },
       [](LimitsSpec& l) { l.kill_grace_seconds = 0; }},
  };
  for (const Case& c : cases) {
    JailSpec spec = ValidSpec();
    c.bad(spec.limits);
    OneProblem(spec, c.field);
    if (c.edge_ok) {
      spec = ValidSpec();
      c.edge_ok(spec.limits);
      EXPECT_THAT(Validate(spec), IsEmpty()) << c.field;
    }
  }
  JailSpec spec = ValidSpec();
  spec.limits.cpus = static_cast<double>(cpus);
  EXPECT_THAT(Validate(spec), IsEmpty());
  spec.limits.cpus = static_cast<double>(cpus) + 0.5;
  EXPECT_THAT(OneProblem(spec, "limits.cpus"), HasSubstr("online CPUs"));

  Result<long long> nr_open = ReadInt("/proc/sys/fs/nr_open");
  ASSERT_TRUE(nr_open);
  spec = ValidSpec();
  spec.limits.open_files = *nr_open + 1;
  EXPECT_THAT(OneProblem(spec, "limits.open_files"), HasSubstr("fs.nr_open"));
}

TEST(ConfigValidate, Cgroups) {
  JailSpec spec = ValidSpec();
  for (const char* ok : {"auto", "v1", "v2"}) {
    spec.cgroups.driver = ok;
    EXPECT_THAT(Validate(spec), IsEmpty()) << ok;
  }
  spec.cgroups.driver = "v3";
  EXPECT_EQ(OneProblem(spec, "cgroups.driver"), "cgroups.driver: must be auto, v1 or v2 (got \"v3\")");
  spec.cgroups.driver = "auto";
  for (const char* ok : {"corral", "a/b.c-d_e", "/corral", "/system.slice/corral"}) {
    spec.cgroups.parent = ok;
    EXPECT_THAT(Validate(spec), IsEmpty()) << ok;
  }
  for (const char* bad : {"", "/", "a//b", "../x", "a/./b", "a b", "x/", "a/..", "c@d"}) {
    spec.cgroups.parent = bad;
    OneProblem(spec, "cgroups.parent");
  }
}

TEST(ConfigValidate, ReportsEveryProblemInOrder) {
  JailSpec spec;  // no argv
  spec.hostname = "bad_name";
  spec.uid = 0;
  spec.limits.pids = 0;
  spec.cgroups.driver = "x";
  const std::vector<std::string> problems = Validate(spec);
  ASSERT_EQ(problems.size(), 5u) << ::testing::PrintToString(problems);
  EXPECT_THAT(problems[0], StartsWith("argv: "));
  EXPECT_THAT(problems[1], StartsWith("hostname: "));
  EXPECT_THAT(problems[2], StartsWith("user.uid: "));
  EXPECT_THAT(problems[3], StartsWith("limits.pids: "));
  EXPECT_THAT(problems[4], StartsWith("cgroups.driver: "));
}

// ---- Flag helpers ----

TEST(ConfigFlags, Mount) {
  Result<MountSpec> m = ParseMountFlag("/srv/a:/a");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->host_path, "/srv/a");
  EXPECT_EQ(m->container_path, "/a");
  EXPECT_TRUE(m->read_only);
  m = ParseMountFlag("/srv/a:/a:rw");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->read_only);
  m = ParseMountFlag("/srv/a:/a:ro");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->read_only);
  for (const char* bad : {"", "/a", ":/a", "/a:", "/a:/b:xx", "/a:/b:ro:x", "/a:/b:RW"}) {
    Result<MountSpec> r = ParseMountFlag(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(r.error().message(), HasSubstr("HOST:CONTAINER[:ro|rw]")) << bad;
  }
}

TEST(ConfigFlags, Env) {
  auto e = ParseEnvFlag("A=1");
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, std::make_pair(std::string("A"), std::string("1")));
  e = ParseEnvFlag("EMPTY=");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->second, "");
  e = ParseEnvFlag("URL=a=b=c");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->first, "URL");
  EXPECT_EQ(e->second, "a=b=c");
  for (const char* bad : {"A", "=x", "1A=x", "A B=x", ""}) {
    EXPECT_FALSE(ParseEnvFlag(bad)) << bad;
  }
}

TEST(ConfigFlags, User) {
  auto u = ParseUserFlag("1000");
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, std::make_pair(1000u, 1000u));
  u = ParseUserFlag("1000:2000");
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, std::make_pair(1000u, 2000u));
  u = ParseUserFlag("0:0");
  ASSERT_TRUE(u);  // allowed here; Validate wants unsafe.allow_root
  EXPECT_EQ(*u, std::make_pair(0u, 0u));
  u = ParseUserFlag("4294967294");
  ASSERT_TRUE(u);
  for (const char* bad : {"", "abc", "1000:", ":1000", "-1", "4294967295", "1000:x", "1 000",
                          "+5", "1000:1000:1", "99999999999"}) {
    Result<std::pair<uint32_t, uint32_t>> r = ParseUserFlag(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr("UID[:GID]")) << bad;
  }
}

}  // namespace
}  // namespace corral::runtime
