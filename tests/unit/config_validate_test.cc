// Validate(): each rule, asserting the exact field path of the problem it reports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "base/files.h"
#include "jail/seccomp.h"
#include "runtime/spec/config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/config_text.h"

namespace corral::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using config_text::kExamplePath;

using config_text::ValidSpec;

// Exactly one problem, for `field`; returns it for further checks.
std::string OneProblem(const JailSpec& spec, const std::string& field) {
  const std::vector<std::string> problems = Validate(spec);
  EXPECT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  if (problems.size() != 1) return "";
  EXPECT_THAT(problems[0], StartsWith(field + ": ")) << problems[0];
  return problems[0];
}

TEST(ConfigValidate, DefaultsWithACommandAreValid) {
  EXPECT_EQ(Validate(ValidSpec()), std::vector<std::string>{});
}

TEST(ConfigValidate, ExampleConfigWithACommandIsValid) {
  JailSpec spec;
  ASSERT_TRUE(LoadConfigFile(kExamplePath, &spec));
  spec.argv = {"bash", "-c", "true"};
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
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
    EXPECT_EQ(Validate(spec), std::vector<std::string>{});
    const std::string name = field == &JailSpec::rootfs          ? "rootfs"
                             : field == &JailSpec::skills_dir    ? "skills_dir"
                             : field == &JailSpec::user_data_dir ? "user_data_dir"
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
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
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
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
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
    EXPECT_EQ(Validate(spec), std::vector<std::string>{}) << ok;
  }
  for (const char* bad :
       {"/", "/proc", "/proc/sys", "/dev", "/dev/shm", "/sys", "/sys/fs/cgroup", "/tmp", "/tmp/x",
        "/mnt/skills", "/mnt/user-data", "/mnt/user-data/workspace", "/mnt/acp-workspace", "/mnt",
        "relative", "/a/../b", "/a//b", "/a/"}) {
    spec.mounts[0].container_path = bad;
    OneProblem(spec, "mounts[0].container_path");
  }
  spec.mounts[0].container_path = "/tmp";
  EXPECT_THAT(OneProblem(spec, "mounts[0].container_path"), HasSubstr("reserved"));
  spec.mounts[0].container_path = "/mnt";
  EXPECT_THAT(OneProblem(spec, "mounts[0].container_path"), HasSubstr("would cover /mnt/skills"));
  // Below /mnt/skills: a read-only skills view (DeerFlow's /mnt/skills/custom, ...) only.
  spec.mounts[0].container_path = "/mnt/skills/custom";
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
  spec.mounts[0].read_only = false;
  EXPECT_THAT(OneProblem(spec, "mounts[0].container_path"), HasSubstr("reserved for skills_dir"));
  spec.mounts[0].container_path = "/mnt/skills";
  spec.mounts[0].read_only = true;
  EXPECT_THAT(OneProblem(spec, "mounts[0].container_path"), HasSubstr("reserved for skills_dir"));
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
  const std::vector<std::string> good = {"sandbox",
                                         "a",
                                         "my-host.example.org",
                                         "x1",
                                         "1x",
                                         std::string(63, 'a'),
                                         std::string(62, 'a') + ".b"};
  for (const std::string& ok : good) {
    spec.hostname = ok;
    EXPECT_EQ(Validate(spec), std::vector<std::string>{}) << ok;
  }
  const std::vector<std::string> bad_names = {"",
                                              std::string(64, 'a'),
                                              std::string(63, 'a') + ".b",
                                              "-a",
                                              "a-",
                                              "a..b",
                                              ".a",
                                              "a.",
                                              "a_b",
                                              "a b",
                                              "a." + std::string(64, 'b')};
  for (const std::string& bad : bad_names) {
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
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
  spec.uid = std::numeric_limits<uint32_t>::max();
  OneProblem(spec, "user.uid");
}

TEST(ConfigValidate, SeccompProfile) {
  JailSpec spec = ValidSpec();
  const std::vector<std::string> builtins = jail::BuiltinSeccompProfileNames();
  EXPECT_THAT(builtins, ::testing::Contains("default"));
  for (const std::string& name : builtins) {
    if (name == "unconfined") continue;  // built in, but gated: checked below
    spec.seccomp_profile = name;
    EXPECT_EQ(Validate(spec), std::vector<std::string>{}) << name;
  }
  spec.seccomp_profile = "nonesuch";
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"), HasSubstr("must be one of default, "));
  spec.seccomp_profile = "unconfined";
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"),
              HasSubstr("needs unsafe.allow_unconfined_seccomp: true"));
  spec.unsafe.allow_unconfined_seccomp = true;
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});

  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("p.json", "{}"));
  spec.seccomp_profile = dir.Join("p.json");
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
  spec.seccomp_profile = dir.Join("missing.json");
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"), HasSubstr("does not exist"));
  spec.seccomp_profile = dir.path();
  EXPECT_THAT(OneProblem(spec, "seccomp.profile"), HasSubstr("must be a regular file"));
}

TEST(ConfigValidate, HostNetworkNeedsUnsafe) {
  JailSpec spec = ValidSpec();
  spec.namespaces.net = false;
  spec.network.mode = NetworkMode::kHost;  // the same setting; the loader and the flags set both
  OneProblem(spec, "network.mode");
  spec.unsafe.host_network = true;
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
  // namespaces.net: false without network.mode host is reported by namespaces.net.
  spec.network.mode = NetworkMode::kNone;
  spec.unsafe.host_network = false;
  const std::vector<std::string> problems = Validate(spec);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0],
            "namespaces.net: false (the host's network) needs unsafe.host_network: true (got "
            "false)");
  EXPECT_THAT(problems[1], StartsWith("namespaces.net: false (no network namespace) contradicts "
                                      "network.mode: none"));
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
      EXPECT_EQ(Validate(spec), std::vector<std::string>{}) << c.field;
    }
  }
  JailSpec spec = ValidSpec();
  spec.limits.cpus = static_cast<double>(cpus);
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
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
  for (CgroupDriverChoice ok :
       {CgroupDriverChoice::kAuto, CgroupDriverChoice::kV1, CgroupDriverChoice::kV2}) {
    spec.cgroups.driver = ok;
    EXPECT_EQ(Validate(spec), std::vector<std::string>{}) << Name(ok);
  }
  // A driver that is none of them is refused where it is read, with Validate's old words.
  JailSpec read;
  Status bad = LoadConfigText("cgroups:\n  driver: v3\n", "t.yaml", &read);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "t.yaml:2: cgroups.driver: must be auto, v1 or v2 (got \"v3\")");
  spec.cgroups.driver = CgroupDriverChoice::kAuto;
  for (const char* ok : {"corral", "a/b.c-d_e", "/corral", "/system.slice/corral"}) {
    spec.cgroups.parent = ok;
    EXPECT_EQ(Validate(spec), std::vector<std::string>{}) << ok;
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
  spec.cgroups.parent = "a b";
  const std::vector<std::string> problems = Validate(spec);
  ASSERT_EQ(problems.size(), 5u) << ::testing::PrintToString(problems);
  EXPECT_THAT(problems[0], StartsWith("argv: "));
  EXPECT_THAT(problems[1], StartsWith("hostname: "));
  EXPECT_THAT(problems[2], StartsWith("user.uid: "));
  EXPECT_THAT(problems[3], StartsWith("limits.pids: "));
  EXPECT_THAT(problems[4], StartsWith("cgroups.parent: "));
}

}  // namespace
}  // namespace corral::runtime
