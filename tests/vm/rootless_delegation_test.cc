// Rootless limits on a delegated cgroup v2 subtree, end to end: an unprivileged user whose
// corral starts inside a cgroup delegated to it gets memory, pids and CPU limits enforced
// exactly as root does; one whose cgroup is not delegated is refused the limits.
//
// Only meaningful on a pure cgroup v2 host, so it is its own program that ctest runs only in
// the throwaway VM (vm.rootless_v2, tests/vm/CMakeLists.txt): our development hosts are
// v1-hybrid, where no unprivileged user can have these limits (run_rootless_test.cc tests
// the refusal there). The VM boots as root with every controller enabled in the root
// cgroup; the test plays the part systemd plays on a real host (`Delegate=yes`): it makes a
// cgroup, gives it to the test uid (the directory, cgroup.procs, cgroup.subtree_control and
// cgroup.threads, the files cgroups(7) says a delegatee owns), starts a shell in it and
// drops to that uid with setpriv. The guest has no account database: the uid is a number.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/files.h"
#include "tests/support/must_run.h"
#include "tests/support/run_corral.h"
#include "tests/support/test_user.h"

namespace corral::test {
namespace {

using nlohmann::json;

constexpr uid_t kUid = 1500;  // no account needed: the guest has no /etc/passwd
constexpr char kDelegated[] = "/sys/fs/cgroup/corral-vmtest-user";
constexpr char kRuntimeDir[] = "/run/corral-vmtest-user";

std::string FromEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Removes a cgroup tree bottom-up (rmdir works only on empty cgroups without children).
void RemoveCgroupTree(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory()) RemoveCgroupTree(entry.path());
  }
  ::rmdir(dir.c_str());
}

class DelegatedV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto controllers = ReadFile("/sys/fs/cgroup/cgroup.controllers");
    if (!controllers || controllers->find("memory") == std::string::npos) {
      CORRAL_SKIP_OR_FAIL("needs a pure cgroup v2 host (this program runs in tests/vm)");
    }
    ASSERT_EQ(::geteuid(), 0u) << "the VM runs its test as root";
    corral_ = FromEnv("CORRAL_TEST_BINARY");
    probe_ = FromEnv("CORRAL_TEST_PROBE");
    ASSERT_FALSE(corral_.empty() || probe_.empty()) << "run by tests/vm/run_corral_vmtest.sh";
    RemoveCgroupTree(kDelegated);
    ASSERT_EQ(::mkdir(kDelegated, 0755), 0) << kDelegated << ": " << std::strerror(errno);
    for (const char* file : {"", "/cgroup.procs", "/cgroup.subtree_control", "/cgroup.threads"}) {
      std::string path = std::string(kDelegated) + file;
      ASSERT_EQ(::chown(path.c_str(), kUid, kUid), 0) << path << ": " << std::strerror(errno);
    }
    std::filesystem::remove_all(kRuntimeDir);
    ASSERT_EQ(::mkdir(kRuntimeDir, 0700), 0);
    ASSERT_EQ(::chown(kRuntimeDir, kUid, kUid), 0);
  }

  void TearDown() override {
    RemoveCgroupTree(kDelegated);
    std::filesystem::remove_all(kRuntimeDir);
  }

  // `corral run --json -v probe ... <flags> -- probe <probe_args>` as uid kUid, started in
  // the delegated cgroup (`delegated`) or left in the test's own, root-owned cgroup.
  Result<JailRun> RunAsUser(const std::vector<std::string>& flags,
                            const std::vector<std::string>& probe_args, bool delegated = true) {
    std::string enter =
        delegated ? "echo $$ > " + std::string(kDelegated) + "/cgroup.procs && " : "";
    std::vector<std::string> args = {
        "-c",
        enter + "exec " + std::string(kSetprivBinary) + " --reuid=" + std::to_string(kUid) +
            " --regid=" + std::to_string(kUid) + " --clear-groups -- \"$@\"",
        "sh", corral_};
    for (const std::string& a : ProbeRunArgs(probe_, flags, probe_args)) args.push_back(a);
    RunOptions options;
    options.env.push_back(std::string("XDG_RUNTIME_DIR=") + kRuntimeDir);
    ASSIGN_OR_RETURN(RunResult run, RunProgram("/bin/sh", args, options));
    return ParseJailed(std::move(run));
  }

  std::string corral_, probe_;
};

TEST_F(DelegatedV2Test, MemoryHogIsOomKilledInTheDelegatedSubtree) {
  Result<JailRun> run = RunAsUser({"--memory", "64m"}, {"alloc", "512"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "oom_killed") << run->Describe();
  EXPECT_EQ(run->outcome["limit"], "memory") << run->Describe();
  ASSERT_TRUE(run->outcome["memory_peak_bytes"].is_number()) << run->Describe();
  EXPECT_LE(run->outcome["memory_peak_bytes"].get<int64_t>(), 80LL << 20) << run->Describe();
  // corral made the jails' parent itself, inside the delegated cgroup, as the user.
  struct stat st;
  std::string parent = std::string(kDelegated) + "/corral";
  ASSERT_EQ(::stat(parent.c_str(), &st), 0) << parent << "\n" << run->Describe();
  EXPECT_EQ(st.st_uid, kUid);
  EXPECT_TRUE(std::filesystem::is_directory(std::string(kDelegated) + "/corral-supervisor"));
}

TEST_F(DelegatedV2Test, ForkBombStopsAtThePidsLimit) {
  Result<JailRun> run =
      RunAsUser({"--pids-limit", "32", "--timeout", "30"}, {"forkbomb", "100000", "60"});
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
  ASSERT_TRUE(run->probe.is_object()) << run->Describe();
  EXPECT_LT(run->probe["forked"].get<int64_t>(), 32) << run->Describe();
  EXPECT_EQ(run->probe["errno"], "EAGAIN") << run->Describe();
  EXPECT_EQ(run->outcome["limit"], "pids") << run->Describe();
}

TEST_F(DelegatedV2Test, CpuLimitThrottles) {
  Result<JailRun> run = RunAsUser({"--cpus", "0.2"}, {"spin", "2"});
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
  double cpu =
      run->outcome["cpu_user_ms"].get<double>() + run->outcome["cpu_system_ms"].get<double>();
  double wall = run->outcome["wall_ms"].get<double>();
  std::printf("rootless cpus=0.2: %.0f ms CPU in %.0f ms wall (%.0f%%)\n", cpu, wall,
              100 * cpu / wall);
  EXPECT_GT(cpu, 100) << run->Describe();
  EXPECT_LT(cpu / wall, 0.5) << run->Describe();  // loose: 0.2 requested
}

TEST_F(DelegatedV2Test, TheJailRunsAsUid1000MappedToTheCaller) {
  Result<JailRun> run = RunAsUser({}, {"read", "/proc/self/uid_map"});
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
  std::string map = run->probe.value("content", "");
  EXPECT_NE(map.find("1000"), std::string::npos) << map;
  EXPECT_NE(map.find(std::to_string(kUid)), std::string::npos) << map;
  EXPECT_EQ(run->outcome.value("warnings", json::array()).dump().find("NOT enforced"),
            std::string::npos)
      << "limits are enforced here, no warning may say otherwise\n"
      << run->Describe();
}

// The same user, started in the test's root-owned cgroup: nothing is delegated to it, so
// the limits are refused (never silently dropped).
TEST_F(DelegatedV2Test, UndelegatedCgroupIsRefusedTheLimits) {
  Result<JailRun> run = RunAsUser({"--memory", "64m"}, {"report"}, /*delegated=*/false);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "setup_failed") << run->Describe();
  std::string message = run->outcome["setup_error"].value("message", "");
  EXPECT_NE(message.find("cannot enforce limits.memory (64 MiB)"), std::string::npos) << message;
  EXPECT_NE(message.find("Delegate=yes"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(std::string(kDelegated) + "/corral"));
}

}  // namespace
}  // namespace corral::test
