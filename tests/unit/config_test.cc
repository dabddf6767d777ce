#include "runtime/spec/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "base/files.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/config_text.h"

namespace corral::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Every field of a JailSpec, one per line, so a mismatch shows as a readable diff.
// Keep in step with runtime/spec/spec.h.
std::string Dump(const JailSpec& s) {
  std::ostringstream o;
  auto opt = [](const std::optional<std::string>& v) { return v ? "'" + *v + "'" : "null"; };
  o << "mode: " << Name(s.mode) << "\nargv:";
  for (const auto& a : s.argv) o << " '" << a << "'";
  o << "\nenv:";
  for (const auto& [k, v] : s.env) o << " " << k << "='" << v << "'";
  o << "\nrootfs: " << opt(s.rootfs) << "\nskills_dir: " << opt(s.skills_dir)
    << "\nuser_data_dir: " << opt(s.user_data_dir)
    << "\nacp_workspace_dir: " << opt(s.acp_workspace_dir) << "\nmounts:";
  for (const auto& m : s.mounts) {
    o << " {" << m.host_path << " -> " << m.container_path << (m.read_only ? " ro" : " rw");
    if (!m.volume.empty()) o << " volume=" << m.volume << (m.image ? " image" : "");
    o << "}";
  }
  o << "\nworkdir: " << opt(s.workdir) << "\nhostname: " << s.hostname << "\nuid: " << s.uid
    << "\ngid: " << s.gid << "\nnamespaces: " << s.namespaces.pid << s.namespaces.uts
    << s.namespaces.ipc << s.namespaces.net << s.namespaces.cgroup
    << "\nseccomp: " << s.seccomp_profile;
  const LimitsSpec& l = s.limits;
  o << "\nlimits: memory=" << l.memory_bytes << " cpus=" << l.cpus << " pids=" << l.pids
    << " timeout=" << l.timeout_seconds
    << " cpu_time=" << (l.cpu_time_seconds ? std::to_string(*l.cpu_time_seconds) : "null")
    << " output=" << l.output_limit_bytes << " tmp=" << l.tmp_size_bytes
    << " fsize=" << l.file_size_bytes << " nofile=" << l.open_files
    << " grace=" << l.kill_grace_seconds;
  o << "\ncgroups: " << Name(s.cgroups.driver) << " " << s.cgroups.parent;
  const NetworkSpec& n = s.network;
  o << "\nnetwork: " << Name(n.mode) << " allow:";
  for (const auto& r : n.allow) o << " " << r;
  o << " deny:";
  for (const auto& r : n.deny) o << " " << r;
  o << " max_connections=" << n.max_connections
    << " max_bytes=" << (n.max_bytes ? std::to_string(*n.max_bytes) : "null");
  o << "\nlandlock: " << Name(s.landlock.enabled) << " tcp=" << s.landlock.tcp << " omit:";
  for (const auto& path : s.landlock.omit) o << " " << path;
  o << "\nunsafe: " << s.unsafe.allow_root << s.unsafe.allow_missing_limits
    << s.unsafe.allow_unconfined_seccomp << s.unsafe.host_network << " network_resolve:";
  for (const auto& [name, address] : s.unsafe.network_resolve) o << " " << name << "=" << address;
  o << "\n";
  return o.str();
}

using config_text::kExamplePath;
using config_text::LoadError;

// Sets every key to something other than its default.
const char* const kEveryKey = R"(
mode: container
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
network: {mode: host, allow: [pypi.org], deny: [evil.org], max_connections: 8, max_bytes: 1m}
landlock: {enabled: true, tcp: false, omit: [/y]}
unsafe: {allow_root: true, allow_missing_limits: true, allow_unconfined_seccomp: true,
         host_network: true, network_resolve: {pypi.test: 127.0.0.1}}
)";

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
    // A map of any keys ("env.*") is documented by its own name.
    const std::string key = path.ends_with(".*") ? path.substr(0, path.size() - 2) : path;
    const size_t cut = key.find_last_of(".]");
    const std::string leaf = cut == std::string::npos ? key : key.substr(cut + 1);
    EXPECT_THAT(*text, HasSubstr(leaf + ":")) << "config.example.yaml does not document " << path;
  }
}

TEST(ConfigLoad, EveryKeyOverrides) {
  JailSpec spec;
  Status s = LoadConfigText(kEveryKey, "every", &spec);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(spec.mode, RunMode::kContainer);
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
  EXPECT_EQ(spec.cgroups.driver, CgroupDriverChoice::kV1);
  EXPECT_EQ(spec.cgroups.parent, "/jails/corral");
  EXPECT_TRUE(spec.unsafe.allow_root);
  EXPECT_TRUE(spec.unsafe.allow_missing_limits);
  EXPECT_TRUE(spec.unsafe.allow_unconfined_seccomp);
  EXPECT_TRUE(spec.unsafe.host_network);
  EXPECT_EQ(spec.network.mode, NetworkMode::kHost);
  EXPECT_EQ(spec.network.allow, std::vector<std::string>{"pypi.org"});
  EXPECT_EQ(spec.network.deny, std::vector<std::string>{"evil.org"});
  EXPECT_EQ(spec.network.max_connections, 8);
  EXPECT_EQ(spec.network.max_bytes, kMiB);
  EXPECT_EQ(spec.landlock.enabled, LandlockMode::kOn);
  EXPECT_FALSE(spec.landlock.tcp);
  EXPECT_EQ(spec.landlock.omit, std::vector<std::string>{"/y"});
  EXPECT_EQ(spec.unsafe.network_resolve,
            (std::vector<std::pair<std::string, std::string>>{{"pypi.test", "127.0.0.1"}}));
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
  EXPECT_TRUE(spec.mounts.empty());
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
  EXPECT_THAT(
      Lines(message),
      ElementsAre(StartsWith("t.yaml:1: hostnme: unknown key (did you mean hostname?); known "
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
                             "volume, container_path, read_only"),
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
  EXPECT_EQ(LoadError("limits: {cpus: 0}"),
            "t.yaml:1: limits.cpus: must be greater than 0 (got 0)");
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
  EXPECT_EQ(LoadError("env: [A=1]"),
            "t.yaml:1: env: expected a mapping of NAME: value, got a list");
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
  for (const char* bad : {"", "abc", "1000:", ":1000", "-1", "4294967295", "1000:x", "1 000", "+5",
                          "1000:1000:1", "99999999999"}) {
    Result<std::pair<uint32_t, uint32_t>> r = ParseUserFlag(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr("UID[:GID]")) << bad;
  }
}

}  // namespace
}  // namespace corral::runtime
