// A root-mode jail's uid 1000 is a reserved host id no account has (runtime/run/identity.h),
// seen from the host: file owners, `ps`, a persistent sandbox re-created, identity: host-uid.
//
// Also the reservation every integration test runs with: a fresh CI machine has none, so
// this binary makes it (`corral setup ids`) before any test, as root, and removes it after
// the last one (`corral setup ids --remove`) if it was not there before.
#include "runtime/run/identity.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

class ReservedIdsEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (::geteuid() != 0) return;
    auto subuid = ReadFile("/etc/subuid");
    auto subgid = ReadFile("/etc/subgid");
    if (runtime::FindReservedRange(subuid ? *subuid : "", subgid ? *subgid : "")) return;
    Result<RunResult> r = RunCorral({"setup", "ids"});
    if (!r || r->exit_code != 0) {
      // Not fatal here: identity tests then fail with this, the others run host-uid.
      std::fprintf(stderr, "corral setup ids failed: %s\n",
                   r ? r->Describe().c_str() : r.error().message().c_str());
      return;
    }
    added_ = true;
  }
  // The host's files as they were (an operator's own reservation stays).
  void TearDown() override {
    if (!added_) return;
    Result<RunResult> r = RunCorral({"setup", "ids", "--remove"});
    if (!r || r->exit_code != 0) {
      std::fprintf(stderr, "corral setup ids --remove failed: %s\n",
                   r ? r->Describe().c_str() : r.error().message().c_str());
    }
  }

 private:
  bool added_ = false;
};
[[maybe_unused]] ::testing::Environment* const kReservedIds =
    ::testing::AddGlobalTestEnvironment(new ReservedIdsEnvironment);

class IdentityTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto subuid = ReadFile("/etc/subuid");
    auto subgid = ReadFile("/etc/subgid");
    ASSERT_TRUE(subuid && subgid);
    auto range = runtime::FindReservedRange(*subuid, *subgid);
    ASSERT_TRUE(range) << "no corral line in /etc/subuid and /etc/subgid:\n" << *subuid;
    range_ = *range;
    ASSERT_EQ(::chmod(data_.path().c_str(), 0777), 0);  // as DeerFlow's thread dirs are
  }
  void TearDown() override {
    for (const auto& name : created_) (void)RunCorral({"rm", name});
  }

  std::string NewName() {
    static std::atomic<int> n{0};
    return "idt-" + std::to_string(getpid()) + "-" + std::to_string(++n);
  }

  // `corral run --json -v DATA:/work:rw <flags> -- sh -c SCRIPT`, which must exit 0.
  void RunSh(const std::vector<std::string>& flags, const std::string& script, JailRun* out) {
    std::vector<std::string> args = {"run", "--json", "-v", data_.path() + ":/work:rw"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    Result<JailRun> run = RunJailed(CorralBinary(), args);
    ASSERT_TRUE(run) << run.error().message();
    *out = std::move(*run);
    ASSERT_EQ(out->outcome.value("exit_code", -1), 0) << out->Describe();
  }

  std::string Create(const std::string& name, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {"create", "--name", name, "-v", data_.path() + ":/work:rw"};
    args.insert(args.end(), flags.begin(), flags.end());
    Result<RunResult> r = RunCorral(args);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    created_.push_back(name);
    return name;
  }
  Result<RunResult> ExecSh(const std::string& name, const std::string& script) {
    return RunCorral({"exec", name, "--", "/bin/sh", "-c", script});
  }

  uid_t OwnerOf(const std::string& relative) {
    struct stat st {};
    EXPECT_EQ(::stat(data_.Join(relative).c_str(), &st), 0) << relative;
    return st.st_uid;
  }
  gid_t GroupOf(const std::string& relative) {
    struct stat st {};
    EXPECT_EQ(::stat(data_.Join(relative).c_str(), &st), 0) << relative;
    return st.st_gid;
  }
  bool InRange(uid_t uid) const {
    return uid >= range_.uids.start && uid < range_.uids.start + range_.uids.count;
  }

  // Whether /etc/passwd has a line whose uid field is `uid`.
  static bool PasswdHasUid(uid_t uid) {
    std::ifstream in("/etc/passwd");
    std::string line;
    while (std::getline(in, line)) {
      size_t a = line.find(':'), b = line.find(':', a + 1), c = line.find(':', b + 1);
      if (c != std::string::npos && line.substr(b + 1, c - b - 1) == std::to_string(uid)) {
        return true;
      }
    }
    return false;
  }

  runtime::ReservedRange range_;
  TempDir data_;
  std::vector<std::string> created_;
};

TEST_F(IdentityTest, RootRunWritesAsAReservedIdThatNoAccountHas) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunSh({}, "id -u; id -g; echo hi > /work/f", &run));
  EXPECT_EQ(run.outcome.value("stdout", ""), "1000\n1000\n") << "the jail still sees 1000";
  const uid_t owner = OwnerOf("f");
  EXPECT_NE(owner, 1000u);
  EXPECT_TRUE(InRange(owner)) << owner;
  EXPECT_EQ(owner, range_.uids.start) << "one-shot runs share slot 0";
  EXPECT_EQ(GroupOf("f"), range_.gids.start);
  EXPECT_FALSE(PasswdHasUid(owner)) << owner;
  EXPECT_EQ(::getpwuid(owner), nullptr) << owner;
  const nlohmann::json& id = run.outcome["identity"];
  EXPECT_EQ(id.value("mode", ""), "reserved") << run.Describe();
  EXPECT_EQ(id.value("uid", 0), 1000);
  EXPECT_EQ(id.value("host_uid", 0u), owner);
}

// The jail's user namespace maps two ids, nothing else: 0 (its setup and init: host root)
// and the command's 1000 (slot 0 of the range, for a one-shot run).
TEST_F(IdentityTest, RootModeMapsOnlyRootAndTheCommandsId) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunSh({}, "cat /proc/self/uid_map /proc/self/gid_map", &run));
  std::istringstream in(run.outcome.value("stdout", ""));
  std::vector<long> numbers;
  for (long n; in >> n;) numbers.push_back(n);
  const long uid = range_.uids.start, gid = range_.gids.start;
  EXPECT_EQ(numbers, (std::vector<long>{0, 0, 1, 1000, uid, 1, 0, 0, 1, 1000, gid, 1}))
      << run.Describe();
}

TEST_F(IdentityTest, HostPsShowsTheSandboxProcessUnderItsReservedId) {
  const std::string name = Create(NewName());
  Result<RunResult> started = ExecSh(name, "nohup sleep 300 >/dev/null 2>&1 & echo ok");
  ASSERT_TRUE(started && started->exit_code == 0)
      << (started ? started->Describe() : started.error().message());
  Result<RunResult> inspect = RunCorral({"inspect", name});  // JSON already
  ASSERT_TRUE(inspect && inspect->exit_code == 0);
  const std::string init_pid =
      std::to_string(nlohmann::json::parse(inspect->out).value("init_pid", 0));
  // The sleep: a process in the init's PID namespace whose name is sleep.
  std::string sandbox_ns = std::filesystem::read_symlink("/proc/" + init_pid + "/ns/pid");
  std::string sleep_pid;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path() / "ns/pid", ec) != sandbox_ns || ec) continue;
    auto comm = ReadFile(entry.path() / "comm");
    if (comm && *comm == "sleep\n") sleep_pid = pid;
  }
  ASSERT_FALSE(sleep_pid.empty()) << "no sleep in the sandbox's PID namespace";
  Result<RunResult> ps = RunProgram("/bin/ps", {"-o", "uid=", "-p", sleep_pid});
  ASSERT_TRUE(ps && ps->exit_code == 0) << (ps ? ps->Describe() : ps.error().message());
  const uid_t uid = static_cast<uid_t>(std::stoul(ps->out));
  EXPECT_NE(uid, 1000u);
  EXPECT_TRUE(InRange(uid)) << uid;
  EXPECT_NE(uid, range_.uids.start) << "a persistent sandbox has a slot of its own";
  EXPECT_FALSE(PasswdHasUid(uid));
  // The init (the jail's root) stays host root: only the command has the reserved id.
  Result<RunResult> init_ps = RunProgram("/bin/ps", {"-o", "uid=", "-p", init_pid});
  ASSERT_TRUE(init_ps && init_ps->exit_code == 0);
  EXPECT_EQ(std::stoul(init_ps->out), 0u);
}

TEST_F(IdentityTest, ARecreatedSandboxGetsTheSameIdAndCanWriteItsEarlierFiles) {
  const std::string name = NewName();
  Create(name);
  Result<RunResult> first =
      ExecSh(name, "echo one > /work/notes && chmod 600 /work/notes && mkdir -m 700 /work/d");
  ASSERT_TRUE(first && first->exit_code == 0)
      << (first ? first->Describe() : first.error().message());
  const uid_t owner = OwnerOf("notes");
  EXPECT_TRUE(InRange(owner)) << owner;
  ASSERT_EQ(RunCorral({"rm", name})->exit_code, 0);
  created_.clear();

  // Another sandbox (another name) is another id, and cannot write the first one's files.
  const std::string other = Create(NewName());
  Result<RunResult> denied = ExecSh(other, "echo x >> /work/notes");
  ASSERT_TRUE(denied);
  EXPECT_NE(denied->exit_code, 0) << denied->Describe();

  Create(name);
  Result<RunResult> again =
      ExecSh(name, "echo two >> /work/notes && touch /work/d/x && cat /work/notes");
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->exit_code, 0) << again->Describe();
  EXPECT_EQ(again->out, "one\ntwo\n");
  EXPECT_EQ(OwnerOf("d/x"), owner);
}

TEST_F(IdentityTest, HostUidKeepsTheJailsIdsAsHostIds) {
  TempDir conf;
  ASSERT_TRUE(conf.WriteFile("c.yaml", "identity: host-uid\n"));
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunSh({"--config", conf.Join("c.yaml")}, "echo hi > /work/f", &run));
  EXPECT_EQ(OwnerOf("f"), 1000u);
  EXPECT_EQ(GroupOf("f"), 1000u);
  EXPECT_EQ(run.outcome["identity"].value("mode", ""), "host-uid") << run.Describe();
  // The flag says the same.
  ASSERT_NO_FATAL_FAILURE(RunSh({"--identity", "host-uid"}, "echo hi > /work/g", &run));
  EXPECT_EQ(OwnerOf("g"), 1000u);
}

TEST_F(IdentityTest, CheckReportsWhoTheJailsUidIsOnTheHost) {
  Result<RunResult> check = RunCorral({"check", "--json"});
  ASSERT_TRUE(check) << check.error().message();
  nlohmann::json report = nlohmann::json::parse(check->out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << check->Describe();
  EXPECT_EQ(report["identity"].value("mode", ""), "reserved") << report["identity"].dump();
  EXPECT_EQ(report["identity"].value("host_uid", 0u), range_.uids.start);
  Result<RunResult> text = RunCorral({"check"});
  ASSERT_TRUE(text);
  EXPECT_NE(text->out.find("identity reserved: the jail's uid 1000/gid 1000 are host uid " +
                           std::to_string(range_.uids.start)),
            std::string::npos)
      << text->out;
}

}  // namespace
}  // namespace corral::test
