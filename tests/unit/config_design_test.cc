// The process-sandbox design's config shape (runtime/spec/config_design.cc): every key mapped
// onto corral's, the design's defaults, problems named by the design's field paths, unknown
// keys refused, a setting written both ways refused, DeerFlow's `sandbox:` told apart, and
// `corral config explain`'s corral form (runtime/spec/config_explain.cc), which loads back
// into the same spec.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "runtime/spec/config.h"
#include "runtime/spec/config_explain.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/server_config.h"
#include "runtime/spec/spec_json.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/config_text.h"

namespace corral::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

MountSpec Bind(const std::string& host, const std::string& container, bool read_only) {
  MountSpec m;
  m.host_path = host;
  m.container_path = container;
  m.read_only = read_only;
  return m;
}

const std::string kDesignExamplePath = std::string(CORRAL_SOURCE_DIR) + "/sandbox.example.yaml";

using config_text::Load;
using config_text::LoadError;

// The design's defaults over corral's: what a design-shaped file with nothing else gives.
JailSpec DesignDefaults() {
  JailSpec spec;
  spec.limits.memory_bytes = 256 * kMiB;
  spec.limits.cpu_time_seconds = 10;
  spec.limits.pids = 16;
  spec.limits.timeout_seconds = 30;
  return spec;
}

class ConfigDesign : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.MakeDirs("root"));
    ASSERT_TRUE(dir_.MakeDirs("data"));
    ASSERT_TRUE(dir_.WriteFile("file", "x"));
  }
  std::string Root() const { return dir_.Join("root"); }
  std::string Data() const { return dir_.Join("data"); }

  test::TempDir dir_;
};

TEST_F(ConfigDesign, EveryKeyMapsOntoCorralsKeys) {
  const JailSpec spec = Load(R"(
sandbox:
  mode: process
  timeout: 12.5
  limits: {memory_mb: 300, cpu_seconds: 7, max_processes: 20}
  filesystem:
    root: )" + Root() + R"(
    mounts:
      - {host: )" + Data() + R"(, guest: /data, readonly: true}
      - {host: )" + Data() + R"(, guest: /scratch, readonly: false}
      - {host: )" + Data() + R"(, guest: /default}
  network: {enabled: true, allow_domains: [pypi.org, "*.github.com:443"]}
  python: {version: "3", allowlist: [math, json]}
  env: {OMP_NUM_THREADS: 2, GREETING: hello there}
)");
  EXPECT_EQ(spec.mode, RunMode::kProcess);
  EXPECT_EQ(spec.limits.timeout_seconds, 12.5);
  EXPECT_EQ(spec.limits.memory_bytes, 300 * kMiB);
  EXPECT_EQ(spec.limits.cpu_time_seconds, 7);
  EXPECT_EQ(spec.limits.pids, 20);
  EXPECT_EQ(spec.user_data_dir, Root());
  EXPECT_EQ(spec.rootfs, std::nullopt) << "root is the sandbox's work directory, not a rootfs";
  EXPECT_THAT(spec.mounts, ElementsAre(Bind(Data(), "/data", true), Bind(Data(), "/scratch", false),
                                       Bind(Data(), "/default", true)));
  EXPECT_EQ(spec.network.mode, NetworkMode::kAllowlist);
  EXPECT_THAT(spec.network.allow, ElementsAre("pypi.org", "*.github.com:443"));
  EXPECT_TRUE(spec.namespaces.net);
  EXPECT_EQ(spec.python.interpreter, "/usr/bin/python3");
  EXPECT_THAT(spec.python.allowlist, ElementsAre("math", "json"));
  EXPECT_THAT(spec.env,
              ElementsAre(std::make_pair(std::string("OMP_NUM_THREADS"), std::string("2")),
                          std::make_pair(std::string("GREETING"), std::string("hello there"))));
  // What the design does not cover keeps corral's defaults.
  EXPECT_EQ(spec.limits.cpus, JailSpec{}.limits.cpus);
  EXPECT_EQ(spec.limits.output_limit_bytes, JailSpec{}.limits.output_limit_bytes);
  EXPECT_EQ(spec.seccomp_profile, "default");
  EXPECT_TRUE(ValidateMounts(spec.mounts).empty());
}

TEST_F(ConfigDesign, DesignDefaultsApplyWhenTheShapeIsUsed) {
  // Loaded over a spec with other values (a daemon's config, say): the design's shape
  // brings its own defaults, network off included.
  JailSpec before;
  before.limits.memory_bytes = 2 * kGiB;
  before.limits.pids = 1000;
  before.network.mode = NetworkMode::kAllowlist;
  before.network.allow = {"pypi.org"};
  const JailSpec spec = Load("sandbox:\n  mode: process\n", before);
  EXPECT_EQ(spec.limits.memory_bytes, 256 * kMiB);
  EXPECT_EQ(spec.limits.cpu_time_seconds, 10);
  EXPECT_EQ(spec.limits.pids, 16);
  EXPECT_EQ(spec.limits.timeout_seconds, 30);
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_TRUE(spec.namespaces.net);
  EXPECT_EQ(SpecToJson(Load("sandbox: {timeout: 30}\n")), SpecToJson(DesignDefaults()));
  EXPECT_EQ(SpecToJson(Load("sandbox: {network: {enabled: false}}\n")),
            SpecToJson(DesignDefaults()));
}

TEST_F(ConfigDesign, CorralsOwnFormKeepsCorralsDefaults) {
  const JailSpec spec = Load("hostname: box\n");
  EXPECT_EQ(spec.limits.memory_bytes, 512 * kMiB);
  EXPECT_EQ(spec.limits.cpu_time_seconds, std::nullopt);
  EXPECT_EQ(spec.limits.pids, 256);
  EXPECT_EQ(spec.limits.timeout_seconds, 600);
}

TEST_F(ConfigDesign, ExampleFileIsTheDesignDefaults) {
  JailSpec spec;
  Status s = LoadConfigFile(kDesignExamplePath, &spec);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(SpecToJson(spec), SpecToJson(DesignDefaults()));
}

TEST_F(ConfigDesign, ProblemsNameTheDesignsFieldPaths) {
  EXPECT_EQ(LoadError("sandbox:\n  limits: {memory_mb: 0}\n"),
            "t.yaml:2: sandbox.limits.memory_mb: must be a positive integer, got \"0\"");
  EXPECT_EQ(LoadError("sandbox:\n  limits:\n    memory_mb: lots\n"),
            "t.yaml:3: sandbox.limits.memory_mb: must be a positive integer, got \"lots\"");
  EXPECT_EQ(LoadError("sandbox:\n  limits: {memory_mb: \"256\"}\n"),
            "t.yaml:2: sandbox.limits.memory_mb: must be a positive integer, got the string "
            "\"256\"");
  EXPECT_EQ(LoadError("sandbox:\n  limits: {memory_mb: 99999999999999999}\n"),
            "t.yaml:2: sandbox.limits.memory_mb: must be at most 8796093022207 (got "
            "99999999999999999)");
  EXPECT_EQ(LoadError("sandbox:\n  limits: {cpu_seconds: 1.5}\n"),
            "t.yaml:2: sandbox.limits.cpu_seconds: must be a positive integer, got \"1.5\"");
  EXPECT_EQ(LoadError("sandbox:\n  limits: {max_processes: -1}\n"),
            "t.yaml:2: sandbox.limits.max_processes: must be a positive integer, got \"-1\"");
  EXPECT_EQ(LoadError("sandbox:\n  timeout: 0\n"),
            "t.yaml:2: sandbox.timeout: must be a positive number of seconds, got \"0\"");
  EXPECT_EQ(LoadError("sandbox:\n  mode: vm\n"),
            "t.yaml:2: sandbox.mode: expected process or container, got \"vm\"");
  EXPECT_EQ(LoadError("sandbox:\n  python: {version: 2}\n"),
            "t.yaml:2: sandbox.python.version: expected 3 or 3.N (corral runs Python 3), got "
            "\"2\"");
  EXPECT_EQ(LoadError("sandbox:\n  python: {version: 3, interpreter: /usr/bin/python3}\n"),
            "t.yaml:2: sandbox.python: give version or interpreter, not both (version 3.N is "
            "the interpreter /usr/bin/python3.N)");
  EXPECT_EQ(LoadError("sandbox:\n  python: {allowlist: [json, a-b]}\n"),
            "t.yaml:2: sandbox.python.allowlist[1]: expected a module name like json or "
            "os.path, got \"a-b\"");
  EXPECT_EQ(LoadError("sandbox:\n  env: {1BAD: x}\n"),
            "t.yaml:2: sandbox.env.1BAD: a variable name must match [A-Za-z_][A-Za-z0-9_]*");
  EXPECT_EQ(LoadError("sandbox:\n  network: {enabled: false, allow_domains: [a.org]}\n"),
            "t.yaml:2: sandbox.network.allow_domains: given with enabled: false, which "
            "reaches nothing; remove one");
  EXPECT_EQ(LoadError("sandbox:\n  filesystem:\n    mounts:\n      - {host: /srv}\n"),
            "t.yaml:4: sandbox.filesystem.mounts[0]: missing guest");
  // Every problem at once.
  EXPECT_EQ(LoadError("sandbox:\n  timeout: -1\n  limits: {memory_mb: 0, max_processes: x}\n"),
            "t.yaml:2: sandbox.timeout: must be a positive number of seconds, got \"-1\"\n"
            "t.yaml:3: sandbox.limits.memory_mb: must be a positive integer, got \"0\"\n"
            "t.yaml:3: sandbox.limits.max_processes: must be a positive integer, got \"x\"");
}

TEST_F(ConfigDesign, HostPathsAreCheckedUnderTheDesignsNames) {
  // The sandbox's temp root is made when it starts (the article's /tmp/deerflow-root);
  // only something in the way is refused.
  JailSpec made = Load("sandbox:\n  filesystem:\n    root: " + dir_.Join("not/yet") + "\n");
  EXPECT_EQ(made.user_data_dir, dir_.Join("not/yet"));
  EXPECT_EQ(LoadError("sandbox:\n  filesystem: {root: " + dir_.Join("file/below") + "}\n"),
            "t.yaml:2: sandbox.filesystem.root: " + dir_.Join("file") +
                " is not a directory, so \"" + dir_.Join("file/below") + "\" cannot be made");
  EXPECT_EQ(
      LoadError("sandbox:\n  filesystem: {root: " + dir_.Join("file") + "}\n"),
      "t.yaml:2: sandbox.filesystem.root: must be a directory (got \"" + dir_.Join("file") + "\")");
  EXPECT_EQ(LoadError("sandbox:\n  filesystem: {root: relative/dir}\n"),
            "t.yaml:2: sandbox.filesystem.root: must be an absolute host path (got "
            "\"relative/dir\")");
  const std::string mounts = "sandbox:\n  filesystem:\n    mounts:\n      - {host: " + Data() +
                             ", guest: /data}\n      - {host: /nonexistent-corral-host, "
                             "guest: /tmp/x}\n      - {host: " +
                             Data() + ", guest: /data}\n";
  EXPECT_EQ(LoadError(mounts),
            "t.yaml:5: sandbox.filesystem.mounts[1].host: does not exist on the host (got "
            "\"/nonexistent-corral-host\")\n"
            "t.yaml:5: sandbox.filesystem.mounts[1].guest: is reserved: corral mounts the "
            "jail's size-limited tmpfs there (got \"/tmp/x\")\n"
            "t.yaml:6: sandbox.filesystem.mounts[2].guest: is also the guest of "
            "sandbox.filesystem.mounts[0] (got \"/data\")");
  // A minor the host lacks is met by the nearest newer one it has (the article's 3.10 on
  // Debian 12's 3.11); refused only when there is none.
  JailSpec newer = Load("sandbox:\n  python: {version: \"3.0\"}\n");
  ASSERT_EQ(newer.python.interpreter.rfind("/usr/bin/python3.", 0), 0u);
  EXPECT_GT(std::stoi(newer.python.interpreter.substr(17)), 0) << newer.python.interpreter;
  struct stat st;
  EXPECT_EQ(::stat(newer.python.interpreter.c_str(), &st), 0) << newer.python.interpreter;
  EXPECT_THAT(LoadError("sandbox:\n  python: {version: \"3.999\"}\n"),
              HasSubstr("t.yaml:2: sandbox.python.version: /usr/bin/python3.999 is not an "
                        "executable on this host, nor any newer Python 3 minor"));
  // With a rootfs the interpreter is the tree's, which the loader does not look into.
  JailSpec spec = Load("rootfs: " + Root() + "\nsandbox:\n  python: {version: \"3.0\"}\n");
  EXPECT_EQ(spec.python.interpreter, "/usr/bin/python3.0");
}

TEST_F(ConfigDesign, UnknownKeysAreRefusedWithTheirPath) {
  EXPECT_THAT(LoadError("sandbox:\n  limits: {memory: 1g}\n"),
              HasSubstr("t.yaml:2: sandbox.limits.memory: unknown key; known keys: memory_mb, "
                        "cpu_seconds, max_processes"));
  EXPECT_THAT(LoadError("sandbox:\n  filesystem: {rootfs: /srv}\n"),
              HasSubstr("t.yaml:2: sandbox.filesystem.rootfs: unknown key (did you mean "
                        "root?); known keys: root, mounts"));
  EXPECT_THAT(LoadError("sandbox:\n  filesystem: {mounts: [{host: /srv, guest: /x, ro: 1}]}\n"),
              HasSubstr("sandbox.filesystem.mounts[0].ro: unknown key; known keys: host, guest, "
                        "readonly"));
  EXPECT_THAT(LoadError("sandbox:\n  python: {verison: 3}\n"),
              HasSubstr("sandbox.python.verison: unknown key (did you mean version?)"));
  // DeerFlow's keys in a design-shaped section: refused, and the shape is named.
  const std::string mixed = LoadError("sandbox:\n  timeout: 30\n  use: jail\n");
  EXPECT_THAT(mixed, HasSubstr("t.yaml:3: sandbox.use: unknown key; known keys: mode, timeout, "
                               "limits, filesystem, network, python, env"));
  EXPECT_THAT(mixed, HasSubstr("t.yaml:1: sandbox: read in the process-sandbox design's shape "
                               "(it has timeout)"));
}

TEST_F(ConfigDesign, ASettingWrittenBothWaysIsRefused) {
  EXPECT_EQ(LoadError("limits: {memory: 1g}\nsandbox:\n  limits: {memory_mb: 256}\n"),
            "t.yaml:1: limits.memory: also set by sandbox.limits.memory_mb (the "
            "process-sandbox design's shape); write it in one place");
  EXPECT_EQ(LoadError("sandbox:\n  timeout: 5\nlimits:\n  timeout: 6\n"),
            "t.yaml:4: limits.timeout: also set by sandbox.timeout (the process-sandbox "
            "design's shape); write it in one place");
  EXPECT_THAT(LoadError("env: {A: b}\nsandbox: {env: {A: c}}\n"),
              HasSubstr("t.yaml:1: env: also set by sandbox.env"));
  EXPECT_THAT(LoadError("mode: process\nsandbox: {mode: process}\n"),
              HasSubstr("t.yaml:1: mode: also set by sandbox.mode"));
  EXPECT_THAT(LoadError("network: {mode: none}\nsandbox: {network: {enabled: false}}\n"),
              HasSubstr("t.yaml:1: network: also set by sandbox.network"));
  EXPECT_THAT(
      LoadError("user_data_dir: " + Data() + "\nsandbox: {filesystem: {root: " + Root() + "}}\n"),
      HasSubstr("t.yaml:1: user_data_dir: also set by sandbox.filesystem.root"));
  // corral's keys for what the design's section leaves out are fine beside it, and win
  // over the design's defaults.
  const JailSpec spec = Load(
      "sandbox: {timeout: 5}\nlimits: {memory: 1g, cpus: 0.5}\n"
      "seccomp: {profile: strict}\n");
  EXPECT_EQ(spec.limits.timeout_seconds, 5);
  EXPECT_EQ(spec.limits.memory_bytes, kGiB);
  EXPECT_EQ(spec.limits.pids, 16);
  EXPECT_EQ(spec.limits.cpus, 0.5);
  EXPECT_EQ(spec.seccomp_profile, "strict");
}

TEST_F(ConfigDesign, NetworkAgreesWithNamespacesNet) {
  EXPECT_EQ(LoadError("namespaces: {net: false}\nunsafe: {host_network: true}\n"
                      "sandbox:\n  network: {enabled: true}\n"),
            "t.yaml:4: sandbox.network.enabled: network mode allowlist contradicts "
            "namespaces.net: false (namespaces.net: false is network.mode: host); set only "
            "one of them");
  // Without the design's network, namespaces.net: false is the host's network, as in
  // corral's form (Validate then wants unsafe.host_network).
  const JailSpec spec = Load("namespaces: {net: false}\nsandbox: {timeout: 9}\n");
  EXPECT_EQ(spec.network.mode, NetworkMode::kHost);
}

TEST_F(ConfigDesign, DeerFlowsSandboxSectionIsToldApart) {
  // DeerFlow's keys, its network mapping among them: the tool layer's, corral's defaults.
  const JailSpec spec = Load("sandbox:\n  use: jail\n  replicas: 2\n  network: {mode: isolated}\n");
  EXPECT_EQ(SpecToJson(spec), SpecToJson(JailSpec{}));
  EXPECT_THAT(LoadError("sandbox:\n  replicas: 0\n"), HasSubstr("sandbox.replicas: must be > 0"));
  // A network with the design's own keys is the design's.
  EXPECT_EQ(Load("sandbox:\n  network: {allow_domains: [pypi.org]}\n").network.mode,
            NetworkMode::kAllowlist);
}

TEST_F(ConfigDesign, ToolConfigFileSplitsTheDesignShapeToTheJail) {
  ASSERT_TRUE(dir_.WriteFile("tool.yaml",
                             "sandbox:\n  limits: {max_processes: 40}\n"
                             "skills: {container_path: /mnt/skills}\n"));
  ProviderConfig provider;
  JailSpec spec;
  Status s = LoadToolConfigFile(dir_.Join("tool.yaml"), &provider, &spec);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(spec.limits.pids, 40);
  EXPECT_EQ(spec.limits.memory_bytes, 256 * kMiB);
  EXPECT_EQ(provider.use, ProviderKind::kJail);
  EXPECT_EQ(provider.replicas, ProviderConfig{}.replicas);
}

// The tool layer's file goes to the main loader without its own sections; the main
// loader's messages carry the file's own line numbers (it used to get a re-emitted text,
// and named the file only).
TEST_F(ConfigDesign, ToolConfigFileProblemsNameTheFilesOwnLines) {
  ASSERT_TRUE(dir_.WriteFile("tool.yaml",
                             "skills: {container_path: /mnt/skills}\n"
                             "# a comment\n"
                             "limits:\n"
                             "  memory: lots\n"
                             "  pidz: 4\n"));
  ProviderConfig provider;
  JailSpec spec;
  Status s = LoadToolConfigFile(dir_.Join("tool.yaml"), &provider, &spec);
  ASSERT_FALSE(s);
  const std::string file = dir_.Join("tool.yaml");
  EXPECT_THAT(s.error().message(), HasSubstr(file + ":4: limits.memory: "));
  EXPECT_THAT(s.error().message(), HasSubstr(file + ":5: limits.pidz: unknown key"));
  ASSERT_TRUE(dir_.WriteFile("bad.yaml", "skills: {container_path: /mnt/skills\n"));
  Status syntax = LoadToolConfigFile(dir_.Join("bad.yaml"), &provider, &spec);
  ASSERT_FALSE(syntax);
  EXPECT_THAT(syntax.error().message(), StartsWith(dir_.Join("bad.yaml") + ":2:1: invalid YAML: "));
}

// Each file reader looks up sections the file may not have (`unsafe:`, `skills:`,
// `sandbox:`): a missing one is "not set", never an exception (the daemon ended with
// YAML::InvalidNode on a config without `unsafe:` when the document was held const).
TEST_F(ConfigDesign, FileReadersTakeFilesWithoutTheirOptionalSections) {
  ASSERT_TRUE(dir_.WriteFile("serve.yaml", "server:\n  listen: 127.0.0.1:8002\n"));
  ServerConfig server;
  Status s = LoadServerConfigFile(dir_.Join("serve.yaml"), &server);
  EXPECT_TRUE(s) << s.error().message();
  EXPECT_FALSE(server.no_auth);
  ASSERT_TRUE(dir_.WriteFile("limits.yaml", "limits:\n  pids: 40\n"));
  ProviderConfig provider;
  JailSpec spec;
  s = LoadToolConfigFile(dir_.Join("limits.yaml"), &provider, &spec);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(spec.limits.pids, 40);
  ServerConfig from_limits;
  s = LoadServerConfigFile(dir_.Join("limits.yaml"), &from_limits);
  EXPECT_TRUE(s) << s.error().message();
}

TEST_F(ConfigDesign, KeyPathsIncludeTheDesignsKeys) {
  const std::vector<std::string> paths = ConfigKeyPaths();
  for (const char* path :
       {"mode", "sandbox.mode", "sandbox.timeout", "sandbox.limits.memory_mb",
        "sandbox.limits.cpu_seconds", "sandbox.limits.max_processes", "sandbox.filesystem.root",
        "sandbox.filesystem.mounts[].host", "sandbox.filesystem.mounts[].guest",
        "sandbox.filesystem.mounts[].readonly", "sandbox.network.enabled",
        "sandbox.network.allow_domains", "sandbox.python.version", "sandbox.python.allowlist",
        "sandbox.env.*"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), path), paths.end()) << path;
  }
}

TEST(ConfigMode, ContainerIsReadAndOnlyProcessOrContainerPass) {
  JailSpec spec;
  ASSERT_TRUE(LoadConfigText("mode: container\n", "t.yaml", &spec));
  EXPECT_EQ(spec.mode, RunMode::kContainer);
  spec.argv = {"/bin/true"};
  EXPECT_TRUE(Validate(spec).empty());
  spec.mode = RunMode::kProcess;
  EXPECT_TRUE(Validate(spec).empty());
  spec.mode = RunMode::kContainer;
  JailSpec back = *SpecFromJson(SpecToJson(spec));
  EXPECT_EQ(back.mode, RunMode::kContainer)
      << "the mode survives a sandbox's state file and the pool protocol";
  // Any other mode is refused where it is read, in the words Validate used for it.
  Status vm = LoadConfigText("mode: vm\n", "t.yaml", &spec);
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().message(), "t.yaml:1: mode: expected process or container, got \"vm\"");
  std::string text = SpecToJson(spec);
  text.replace(text.find("\"container\""), 11, "\"vm\"");
  Result<JailSpec> from_json = SpecFromJson(text);
  ASSERT_FALSE(from_json);
  EXPECT_EQ(from_json.error().message(),
            "sandbox spec: mode: must be process or container (got \"vm\")");
}

// ---- corral config explain ----

JailSpec LoadExplained(const std::string& text) {
  JailSpec spec;
  Status s = LoadConfigText(text, "explained", &spec);
  EXPECT_TRUE(s) << s.error().message() << "\n" << text;
  return spec;
}

TEST_F(ConfigDesign, ExplainWritesTheDesignShapeInCorralsKeys) {
  const std::string design = R"(
sandbox:
  mode: process
  timeout: 30
  limits: {memory_mb: 256, cpu_seconds: 10, max_processes: 16}
  filesystem: {root: )" + Root() +
                             R"(, mounts: [{host: )" + Data() +
                             R"(, guest: /data, readonly: true}]}
  network: {enabled: false}
  python: {version: "3", allowlist: [math, json]}
  env: {OMP_NUM_THREADS: 2}
)";
  auto explained = ExplainConfigText(design, "t.yaml", /*all=*/false);
  ASSERT_TRUE(explained) << explained.error().message();
  const std::string& yaml = explained->yaml;
  EXPECT_THAT(yaml, HasSubstr("env:\n  OMP_NUM_THREADS: 2\n"));
  EXPECT_THAT(yaml, HasSubstr("user_data_dir: " + Root() + "\n"));
  EXPECT_THAT(yaml, HasSubstr("mounts:\n  - host_path: " + Data() +
                              "\n    container_path: /data\n    read_only: true\n"));
  EXPECT_THAT(yaml, HasSubstr("limits:\n  memory: 256m\n  pids: 16\n  timeout: 30\n"
                              "  cpu_time: 10\n"));
  EXPECT_THAT(yaml, HasSubstr("python:\n  allowlist: [math, json]\n"));
  EXPECT_THAT(yaml, Not(HasSubstr("sandbox"))) << "the design's section is translated, not copied";
  EXPECT_THAT(yaml, Not(HasSubstr("network"))) << "network off is corral's default too";
  // Loads back into the same spec: the corral form says the same thing.
  EXPECT_EQ(SpecToJson(LoadExplained(yaml)), SpecToJson(Load(design)));
  EXPECT_EQ(SpecToJson(LoadExplained(explained->json)), SpecToJson(Load(design)));
  auto all = ExplainConfigText(design, "t.yaml", /*all=*/true);
  ASSERT_TRUE(all);
  EXPECT_THAT(all->yaml, HasSubstr("mode: process\n"));
  EXPECT_THAT(all->yaml, HasSubstr("network:\n  mode: none\n"));
  EXPECT_THAT(all->yaml, HasSubstr("  output: 10m\n"));
  EXPECT_EQ(SpecToJson(LoadExplained(all->yaml)), SpecToJson(Load(design)));
  // --json is one object with the same keys.
  const nlohmann::json j = nlohmann::json::parse(explained->json);
  EXPECT_EQ(j["limits"]["memory"], "256m");
  EXPECT_EQ(j["env"]["OMP_NUM_THREADS"], "2");
}

TEST_F(ConfigDesign, ExplainOfCorralsFormLoadsBackTheSame) {
  const std::string corral = R"(
mode: container
hostname: "null"
env: {A: "", B: "true", C: "~"}
user_data_dir: )" + Root() + R"(
mounts: [{host_path: )" + Data() +
                             R"(, container_path: /d, read_only: false}]
namespaces: {net: false}
limits: {memory: 1.5g, cpus: 0.5, timeout: 0.25, output: 1000, tmp_size: 3m}
network: {mode: host, allow: [pypi.org], max_bytes: 1m}
landlock: {enabled: false, omit: [/d]}
unsafe: {host_network: true, network_resolve: {a.test: [127.0.0.1, "::1"]}, no_auth: true}
python: {scan: {mode: warn, deny_modules: [ctypes]}, commands: [/bin/true]}
skills: {container_path: /mnt/skills}
server: {listen: "127.0.0.1:9000", max_header_bytes: 16k}
)";
  auto explained = ExplainConfigText(corral, "t.yaml", /*all=*/false);
  ASSERT_TRUE(explained) << explained.error().message();
  EXPECT_EQ(SpecToJson(LoadExplained(explained->yaml)), SpecToJson(Load(corral)))
      << explained->yaml;
  EXPECT_EQ(SpecToJson(LoadExplained(explained->json)), SpecToJson(Load(corral)))
      << explained->json;
  // What a jail only checks is copied: the daemon and the tool layer read the same file.
  EXPECT_THAT(explained->yaml, HasSubstr("server:\n  listen: 127.0.0.1:9000\n"));
  EXPECT_THAT(explained->yaml, HasSubstr("  no_auth: true\n"));
  EXPECT_THAT(explained->yaml, HasSubstr("skills:\n  container_path: /mnt/skills\n"));
  // The errors are the loader's.
  auto bad = ExplainConfigText("sandbox: {limits: {memory_mb: 0}}\n", "t.yaml", false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(),
            "t.yaml:1: sandbox.limits.memory_mb: must be a positive integer, got \"0\"");
}

TEST(ConfigExplain, ExampleFileSaysNothingButTheDefaults) {
  auto explained =
      ExplainConfigFile(std::string(CORRAL_SOURCE_DIR) + "/config.example.yaml", false);
  ASSERT_TRUE(explained) << explained.error().message();
  // The example's DeerFlow, skills and server sections are copied; nothing of the jail is.
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(explained->json);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_THAT(keys, ElementsAre("unsafe", "sandbox", "skills", "server")) << explained->yaml;
  EXPECT_EQ(j["unsafe"], nlohmann::ordered_json({{"no_auth", false}}));
}

}  // namespace
}  // namespace corral::runtime
