// Docker habits at corral's command line (issue 13): Docker-only verbs and options get the
// corral form in one line, the Docker options that mean what corral does anyway are
// accepted, a command without `--` is taken as the command, `inspect` and `logs` exist,
// `ps`/`stats` are for people, and validation errors name the flag the user typed, not
// a spec key. Black-box through the corral binary.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

// Exit 125 with `needle` on stderr, and none of CLI11's bare texts.
void ExpectRefused(const std::vector<std::string>& args, const std::string& needle) {
  Result<RunResult> r = RunCorral(args);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find(needle), std::string::npos) << r->Describe();
  EXPECT_EQ(r->err.find("A subcommand is required"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->err.find("not expected"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->err.find("Run with --help"), std::string::npos) << r->Describe();
}

TEST(CliDockerHabitsTest, DockerVerbsGetTheCorralForm) {
  ExpectRefused({"stop", "t1"}, "corral rm NAME");
  ExpectRefused({"kill", "t1"}, "corral rm NAME");
  ExpectRefused({"attach", "t1"}, "corral exec -it NAME -- bash");
  ExpectRefused({"pull", "debian"}, "--rootfs DIR");
}

TEST(CliDockerHabitsTest, UnknownCommandListsTheCommands) {
  ExpectRefused({"frobnicate"}, "frobnicate: no such command; the commands are run create exec");
}

TEST(CliDockerHabitsTest, DockerOnlyRunOptionsGetTheCorralForm) {
  ExpectRefused({"run", "-d", "--", "true"}, "-d: no such option; corral has no detached runs");
  ExpectRefused({"run", "-d", "--", "true"}, "corral create --name NAME");
  // -t is an option of run and exec (a terminal per command); create has none.
  ExpectRefused(
      {"create", "-t"},
      "-t: no such option; a terminal is given per command: corral exec -it NAME -- bash");
  ExpectRefused({"run", "-p", "8080:80", "--", "true"}, "nothing can be published");
  ExpectRefused({"run", "--name", "x", "--", "true"}, "corral create --name NAME");
  ExpectRefused({"exec", "-d", "t1", "--", "true"}, "corral has no detached runs");
}

TEST(CliDockerHabitsTest, MistypedOptionsGetTheClosestOne) {
  ExpectRefused({"run", "--memroy", "1g", "--", "true"},
                "run: --memroy: no such option (did you mean --memory?)");
  ExpectRefused({"create", "--idle-timout=5"}, "did you mean --idle-timeout?");
  // Subcommands without a command of their own: CLI11's refusal, then the suggestion.
  Result<RunResult> ps = RunCorral({"ps", "--jsn"});
  ASSERT_TRUE(ps) << ps.error().message();
  EXPECT_EQ(ps->exit_code, 125) << ps->Describe();
  EXPECT_NE(ps->err.find("corral: ps: --jsn: did you mean --json?"), std::string::npos)
      << ps->Describe();
}

TEST(CliDockerHabitsTest, ADockerImageAsTheCommandIsNamedAsSuch) {
  Result<RunResult> r = RunCorral({"run", "--pool", "off", "ubuntu:22.04", "bash"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 127) << r->Describe();
  EXPECT_NE(r->err.find("ubuntu:22.04 looks like a Docker image, and corral has no images"),
            std::string::npos)
      << r->Describe();
  Result<RunResult> plain = RunCorral({"run", "--pool", "off", "no-such-command-x"});
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->exit_code, 127) << plain->Describe();
  EXPECT_EQ(plain->err.find("Docker image"), std::string::npos) << plain->Describe();
}

// `-v data:/data` is a named volume (volume_test.cc); a source that is neither a name nor
// a path is refused with the path's form.
TEST(CliDockerHabitsTest, ASourceThatIsNoVolumeNameIsRefusedWithTheRelativeForm) {
  ExpectRefused({"run", "--pool", "off", "-v", "data/in:/data", "--", "true"},
                "-v data/in:/data: 'data/in' is no volume name (must be 1 to 64 letters, "
                "digits, '_', '-' or '.', starting with a letter or digit); a host directory "
                "is an absolute path or starts with . (here: ./data/in)");
}

TEST(CliDockerHabitsTest, UnknownOptionPointsToDoubleDash) {
  ExpectRefused({"run", "--frob", "--", "true"},
                "run: --frob: no such option (corral run --help). A command whose own options "
                "come first goes after --: corral run [OPTIONS] -- CMD [ARGS...]");
}

TEST(CliDockerHabitsTest, NetworkHostAndUnknownModesAreRefusedWithTheReason) {
  ExpectRefused({"run", "--pool", "off", "--network", "host", "--", "true"},
                "--network host: the host's network needs unsafe.host_network: true in a "
                "--config file");
  ExpectRefused({"run", "--pool", "off", "--network", "bridge", "--", "true"},
                "--network bridge: expected none, allowlist or host");
  ExpectRefused({"run", "--pool", "off", "--network", "none", "--allow", "pypi.org", "--", "true"},
                "--allow pypi.org: rules need --network allowlist (got --network none)");
}

// Validation errors named spec keys (`mounts[0].host_path`) the user never typed.
TEST(CliDockerHabitsTest, ValidationErrorsNameTheFlagAsGiven) {
  ExpectRefused({"run", "--pool", "off", "-v", "/nope-h3:/work", "--", "true"},
                "-v /nope-h3:/work: host path does not exist on the host");
  ExpectRefused({"run", "--pool", "off", "--mount", "/nope-h3:/work", "--", "true"},
                "--mount /nope-h3:/work: host path does not exist");
  Result<RunResult> r = RunCorral(
      {"run", "--pool", "off", "--memory", "1k", "--cpus", "999", "-w", "rel", "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  for (const char* needle : {"--memory 1k: must be at least 4 MiB", "--cpus 999: must be at most",
                             "-w rel: must be an absolute path"}) {
    EXPECT_NE(r->err.find(needle), std::string::npos) << needle << "\n" << r->Describe();
  }
  for (const char* key : {"limits.memory", "limits.cpus", "workdir:"}) {
    EXPECT_EQ(r->err.find(key), std::string::npos) << key << "\n" << r->Describe();
  }
}

// A mount from the config file keeps its config key; one from -v after it names the flag.
TEST(CliDockerHabitsTest, ConfigKeysStayAndFlagsAfterThemAreNamed) {
  TempDir dir;
  std::string config = dir.path() + "/c.yaml";
  std::ofstream(config) << "mounts:\n  - host_path: /nope-h3-config\n    container_path: /a\n";
  Result<RunResult> r = RunCorral(
      {"run", "--pool", "off", "--config", config, "-v", "/nope-h3-flag:/b", "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("mounts[0].host_path: does not exist"), std::string::npos) << r->Describe();
  EXPECT_NE(r->err.find("-v /nope-h3-flag:/b: host path does not exist"), std::string::npos)
      << r->Describe();
  EXPECT_EQ(r->err.find("mounts[1]"), std::string::npos) << r->Describe();
}

class CliDockerHabitsJailTest : public JailTest {
 protected:
  void TearDown() override {
    for (const auto& name : created_) (void)RunCorral({"rm", name});
    JailTest::TearDown();
  }

  std::string Create(const std::vector<std::string>& flags, std::string name = "") {
    static std::atomic<int> n{0};
    if (name.empty()) name = "dh-" + std::to_string(getpid()) + "-" + std::to_string(++n);
    std::vector<std::string> args = {"create", "--name", name};
    args.insert(args.end(), flags.begin(), flags.end());
    Result<RunResult> r = RunCorral(args);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    created_.push_back(name);
    return name;
  }

  std::vector<std::string> created_;
};

TEST_F(CliDockerHabitsJailTest, RmAndNetworkNoneAreAcceptedAsTheDefaults) {
  Result<RunResult> r =
      RunCorral({"run", "--pool", "off", "--rm", "--network", "none", "--", "true"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
}

// Docker's short forms and the options that say what every jail already is.
TEST_F(CliDockerHabitsJailTest, DockersShortFormsReadOnlyAndInitAreAccepted) {
  Result<RunResult> r =
      RunCorral({"run", "--pool", "off", "-m", "64m", "-u", "1000:1000", "--read-only", "--init",
                 "--", "sh", "-c", "id -u; touch /usr/x 2>/dev/null || echo ro; echo $$"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out.substr(0, 8), "1000\nro\n") << r->Describe();
  EXPECT_NE(r->out.substr(8), "1\n") << "the command is not PID 1: " << r->Describe();
  // A bad value is named with the flag as typed.
  ExpectRefused({"run", "--pool", "off", "-m", "1k", "--", "true"},
                "-m 1k: must be at least 4 MiB");
  std::string name = Create({"-m", "64m", "--read-only", "--init"});
  Result<RunResult> inspect = RunCorral({"inspect", name});
  ASSERT_TRUE(inspect && inspect->exit_code == 0);
  EXPECT_EQ(nlohmann::json::parse(inspect->out)["limits"]["memory_bytes"], 64ll << 20)
      << inspect->out;
}

// `-v ./src:/src` and `--user-data ./t1` (the README's create): relative to the current
// directory, as docker takes -v ./src.
TEST_F(CliDockerHabitsJailTest, RelativeHostPathsAreTakenFromTheCurrentDirectory) {
  TempDir dir;
  ASSERT_TRUE(dir.MakeDirs("src"));
  ASSERT_TRUE(dir.WriteFile("src/f", "here\n", 0644));
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  auto r = RunProgram("/bin/sh", {"-c", "cd '" + dir.path() + "' && '" + CorralBinary() +
                                            "' run --pool off -v ./src:/src -- cat /src/f"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, "here\n") << r->Describe();
}

TEST_F(CliDockerHabitsJailTest, EnvNameAlonePassesTheCallersValue) {
  RunOptions options;
  options.env = {"CORRAL_H3_SET=from-the-caller"};
  options.env.push_back("CORRAL_H3_UNSET_GUARD=x");
  Result<RunResult> r = RunCorral(
      {"run", "--pool", "off", "-e", "CORRAL_H3_SET", "-e", "CORRAL_H3_NEVER_SET", "--", "sh", "-c",
       "echo \"$CORRAL_H3_SET ${CORRAL_H3_NEVER_SET-unset} ${CORRAL_H3_UNSET_GUARD-none}\""},
      options);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  // Only what -e names goes in; an unset name stays out (as with docker).
  EXPECT_EQ(r->out, "from-the-caller unset none\n") << r->Describe();
}

// `corral run echo -n hi` said "-n was not expected"; -e/-v took `sh` as a second value.
TEST_F(CliDockerHabitsJailTest, ACommandWithoutDoubleDashIsTheCommand) {
  Result<RunResult> r = RunCorral({"run", "--pool", "off", "echo", "-n", "hi"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, "hi") << r->Describe();
  r = RunCorral({"run", "--pool", "off", "-e", "A=1", "-v", ProbeBinary() + ":/opt/p:ro", "sh",
                 "-c", "echo $A; test -x /opt/p && echo mounted"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, "1\nmounted\n") << r->Describe();
  std::string name = Create({});
  r = RunCorral({"exec", "--pool", "off", name, "echo", "-n", "in-sandbox"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, "in-sandbox") << r->Describe();
}

TEST_F(CliDockerHabitsJailTest, RmNeedsANameAndForceIgnoresMissingOnes) {
  ExpectRefused({"rm"}, "rm: no sandbox named (corral rm NAME... or corral rm --all)");
  Result<RunResult> r = RunCorral({"rm", "dh-no-such-sandbox"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  r = RunCorral({"rm", "-f", "dh-no-such-sandbox"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  std::string name = Create({});
  r = RunCorral({"rm", "-f", name});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, name + "\n") << r->Describe();
  Result<RunResult> gone = RunCorral({"inspect", name});
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->exit_code, 125) << gone->Describe();
}

TEST_F(CliDockerHabitsJailTest, InspectPrintsSpecLimitsMountsAndState) {
  ExpectRefused({"inspect", "dh-no-such-sandbox"}, "dh-no-such-sandbox");
  std::string name = Create(
      {"--memory", "256m", "--pids-limit", "64", "-v", ProbeBinary() + ":/opt/p:ro", "-e", "DH=1"});
  Result<RunResult> r = RunCorral({"inspect", name});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  auto j = nlohmann::json::parse(r->out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r->Describe();
  EXPECT_EQ(j.value("name", ""), name);
  EXPECT_EQ(j.value("state", ""), "running");
  EXPECT_GT(j.value("init_pid", 0), 1);
  EXPECT_EQ(j["limits"].value("memory_bytes", int64_t{0}), 256 << 20) << j.dump();
  EXPECT_EQ(j["limits"].value("pids", 0), 64) << j.dump();
  ASSERT_TRUE(j["mounts"].is_array() && j["mounts"].size() == 1) << j.dump();
  EXPECT_EQ(j["mounts"][0].value("container_path", ""), "/opt/p");
  EXPECT_EQ(j["mounts"][0].value("read_only", false), true);
  ASSERT_TRUE(j["spec"].is_object()) << j.dump();
  EXPECT_NE(j["spec"].dump().find("\"DH\""), std::string::npos) << j.dump();
}

TEST_F(CliDockerHabitsJailTest, LogsSaysThereIsNoMainProcessAndHowToKeepOutput) {
  ExpectRefused({"logs", "dh-no-such-sandbox"}, "dh-no-such-sandbox");
  std::string name = Create({});
  ExpectRefused({"logs", name}, "has no main process of its own");
  ExpectRefused({"logs", name}, "corral exec " + name + " -- cat /tmp/out.log");
}

// ps: a 35-character th- name fits its column (the rows line up with the header); sizes
// in MiB beside the limit, ages in s; -a is accepted.
TEST_F(CliDockerHabitsJailTest, PsIsATableForPeople) {
  std::string name = "th-dh" + std::to_string(getpid());
  name.resize(35, 'a');
  Create({"--memory", "256m"}, name);
  Result<RunResult> r = RunCorral({"ps", "-a"});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  std::istringstream lines(r->out);
  std::string header, line, row;
  std::getline(lines, header);
  while (std::getline(lines, line)) {
    if (line.rfind(name + " ", 0) == 0) row = line;
  }
  ASSERT_FALSE(row.empty()) << r->Describe();
  // Text columns start where their header word does, number columns end where it does.
  for (const char* column : {"ID", "STATE"}) {
    size_t at = header.find(column);
    ASSERT_NE(at, std::string::npos) << column << "\n" << r->Describe();
    EXPECT_NE(row[at], ' ') << column << "\n" << r->Describe();
    EXPECT_EQ(row[at - 1], ' ') << column << "\n" << r->Describe();
  }
  for (std::string column : {" AGE", " MEMORY"}) {
    size_t end = header.find(column + " ");
    ASSERT_NE(end, std::string::npos) << column << "\n" << r->Describe();
    end += column.size();
    ASSERT_LT(end, row.size()) << column << "\n" << r->Describe();
    EXPECT_NE(row[end - 1], ' ') << column << "\n" << r->Describe();
    EXPECT_EQ(row[end], ' ') << column << "\n" << r->Describe();
  }
  EXPECT_NE(row.find("MiB/256MiB"), std::string::npos) << r->Describe();
  EXPECT_NE(row.find("/256 "), std::string::npos) << "pids beside their limit\n" << r->Describe();
  EXPECT_NE(row.find("running"), std::string::npos) << r->Describe();
}

TEST_F(CliDockerHabitsJailTest, StatsShowsLimitsBesideUsageInMiB) {
  std::string name = Create({"--memory", "256m", "--pids-limit", "64", "--cpus", "0.5"});
  Result<RunResult> r = RunCorral({"stats", name});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_NE(r->out.find("MiB/256MiB"), std::string::npos) << r->Describe();
  EXPECT_NE(r->out.find(" / 64"), std::string::npos) << r->Describe();
  EXPECT_NE(r->out.find("(limit 0.5 cpus)"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->out.find("memory_bytes"), std::string::npos) << r->Describe();
  Result<RunResult> json = RunCorral({"stats", "--json", name});
  ASSERT_TRUE(json && json->exit_code == 0);
  auto j = nlohmann::json::parse(json->out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << json->Describe();
  EXPECT_TRUE(j["memory_bytes"].is_number()) << j.dump();
  EXPECT_EQ(j["limits"].value("memory_bytes", int64_t{0}), 256 << 20) << j.dump();
}

TEST_F(CliDockerHabitsJailTest, CreateValidationErrorsNameTheFlag) {
  static std::atomic<int> n{0};
  std::string name = "dh-bad-" + std::to_string(getpid()) + "-" + std::to_string(++n);
  ExpectRefused({"create", "--name", name, "-v", "/nope-h3:/work"},
                "-v /nope-h3:/work: host path does not exist");
  ExpectRefused({"inspect", name}, name);
}

}  // namespace
}  // namespace corral::test
