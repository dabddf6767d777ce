// What a command sees from inside `corral run` with the defaults: black-box, through the
// corral binary and the static probe (tests/probe). Root only; every test is leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "base/files.h"
#include "tests/support/ia32.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

using nlohmann::json;

// Every test runs twice: corral as root, and as an unprivileged user (rootless mode: the
// jail in a user namespace of its own, tests/support/jail_test.h UseTestUser).
enum class Caller { kRoot, kUnprivileged };

class IsolationTest : public JailTest, public ::testing::WithParamInterface<Caller> {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (GetParam() == Caller::kUnprivileged) {
      ASSERT_NO_FATAL_FAILURE(UseTestUser());
    }
  }
};

INSTANTIATE_TEST_SUITE_P(, IsolationTest, ::testing::Values(Caller::kRoot, Caller::kUnprivileged),
                         [](const ::testing::TestParamInfo<Caller>& info) {
                           return info.param == Caller::kRoot ? "AsRoot" : "AsUnprivilegedUser";
                         });

std::string Dump(const json& j) { return j.dump(); }

// The probe reports errno names; a refused write may be either, depending on whether the
// mount is read-only (EROFS) or the directory is not ours (EACCES). Both mean "not writable".
bool NotWritable(const json& write_result) {
  return write_result["ok"] == false &&
         (write_result["errno"] == "EROFS" || write_result["errno"] == "EACCES");
}

TEST_P(IsolationTest, PidNamespaceShowsOnlyTheJail) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  EXPECT_EQ(r["pid"], 2) << "the command should be corral-init's child";
  EXPECT_EQ(r["ppid"], 1);
  EXPECT_EQ(r["proc1_cmdline"], "corral-init");
  // corral-init and the probe; nothing of the host.
  EXPECT_LE(r["pids_visible"].get<int>(), 3) << Dump(r["pids"]);
  for (const json& pid : r["pids"]) EXPECT_LE(pid.get<int>(), 3) << Dump(r["pids"]);
}

TEST_P(IsolationTest, HostPidsCannotBeSignalled) {
  ASSERT_GT(getpid(), 10) << "the test's own pid must not collide with jail pids";
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"kill", std::to_string(getpid()), "0"}, &run));
  EXPECT_EQ(run.probe["ok"], false) << run.Describe();
  EXPECT_EQ(run.probe["errno"], "ESRCH") << run.Describe();
}

// corral-init is PID 1 of the jail; the kernel ignores SIGKILL sent to a namespace's init
// from inside, and if corral-init did die the probe would die with it.
TEST_P(IsolationTest, KillingInitFromInsideChangesNothing) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"kill", "1", "9"}, &run));
  RecordProperty("kill_1_9", Dump(run.probe));
}

TEST_P(IsolationTest, HostnameIsSandboxOrTheOneAsked) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  EXPECT_EQ(r["hostname"], "sandbox");
  ASSERT_NO_FATAL_FAILURE(Report({"--hostname", "box-7"}, &r));
  EXPECT_EQ(r["hostname"], "box-7");
}

TEST_P(IsolationTest, OnlyLoopbackAndItIsUp) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  ASSERT_EQ(r["interfaces"].size(), 1u) << Dump(r["interfaces"]);
  EXPECT_EQ(r["interfaces"][0]["name"], "lo");
  EXPECT_EQ(r["interfaces"][0]["up"], true);
}

TEST_P(IsolationTest, UnprivilegedIdsWithoutSupplementaryGroups) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  for (const char* key : {"uid", "euid", "suid", "gid", "egid", "sgid"}) {
    EXPECT_EQ(r[key], 1000) << key;
  }
  EXPECT_EQ(r["groups"], json::array());
}

TEST_P(IsolationTest, NoCapabilitiesNoNewPrivsSeccompFilter) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  for (const char* key : {"CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"}) {
    EXPECT_EQ(r[key], "0000000000000000") << key;
  }
  EXPECT_EQ(r["NoNewPrivs"], 1);
  EXPECT_EQ(r["Seccomp"], 2) << "2 = SECCOMP_MODE_FILTER";
}

TEST_P(IsolationTest, CuratedEtcHasNoSecrets) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  for (const char* path : {"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d",
                           "/root/.ssh", "/var/run/docker.sock", "/run/docker.sock"}) {
    EXPECT_EQ(r["exists"][path], false) << path;
  }
  RecordProperty("etc_ssh_exists", Dump(r["exists"]["/etc/ssh"]));
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"read", "/etc/passwd"}, &run));
  ASSERT_EQ(run.probe["ok"], true) << run.Describe();
  std::string passwd = run.probe["content"];
  EXPECT_NE(passwd.find("sandbox:x:1000:1000:"), std::string::npos) << passwd;
}

// Only fds 0, 1 and 2 reach the command, even when corral itself was started with a stray
// inheritable fd (here: one open on the host's "/", which would be an escape hatch).
TEST_P(IsolationTest, OnlyStdioFdsReachTheCommand) {
  RunOptions options;
  options.stray_fd = 57;
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r, options));
  std::vector<int> fds;
  for (const json& fd : r["fds"]) fds.push_back(fd["fd"]);
  EXPECT_EQ(fds, (std::vector<int>{0, 1, 2})) << Dump(r["fds"]);
}

TEST_P(IsolationTest, NewSessionWithoutControllingTerminal) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  EXPECT_GT(r["sid"].get<int>(), 0) << "session made outside the jail's pid namespace";
  EXPECT_NE(r["dev_tty_errno"], nullptr) << "/dev/tty opened: a controlling tty leaked in";
}

TEST_P(IsolationTest, EnvironmentIsTheSmallDefaultPlusE) {
  RunOptions options;
  options.env = {"CORRAL_TEST_CANARY=from-the-host"};
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({"-e", "FOO=bar", "-e", "EMPTY="}, &r, options));
  std::set<std::string> env;
  for (const json& e : r["env"]) env.insert(e.get<std::string>());
  EXPECT_TRUE(env.count("FOO=bar")) << Dump(r["env"]);
  EXPECT_TRUE(env.count("EMPTY=")) << Dump(r["env"]);
  EXPECT_TRUE(env.count("HOME=/home/sandbox")) << Dump(r["env"]);
  EXPECT_TRUE(std::any_of(env.begin(), env.end(),
                          [](const std::string& e) { return e.rfind("PATH=", 0) == 0; }));
  for (const std::string& e : env) {
    EXPECT_EQ(e.find("CORRAL_TEST_CANARY"), std::string::npos) << "host env leaked: " << e;
  }
  EXPECT_LE(env.size(), 12u) << "not a small default: " << Dump(r["env"]);
}

TEST_P(IsolationTest, SystemDirectoriesAndSkillsAreNotWritable) {
  TempDir skills;
  ASSERT_EQ(chmod(skills.path().c_str(), 0755), 0);
  ASSERT_TRUE(skills.WriteFile("SKILL.md", "# a skill\n"));
  for (const char* path :
       {"/probe-was-here", "/usr/probe-was-here", "/etc/probe-was-here", "/bin/probe-was-here",
        "/mnt/skills/probe-was-here", "/mnt/skills/SKILL.md", "/opt/probe/probe-was-here",
        "/proc/sys/kernel/hostname"}) {
    JailRun run;
    ASSERT_NO_FATAL_FAILURE(RunProbeOk({"--skills", skills.path()}, {"write", path}, &run));
    EXPECT_TRUE(NotWritable(run.probe)) << path << ": " << Dump(run.probe);
  }
  Result<std::string> skill = ReadFile(skills.Join("SKILL.md"));
  ASSERT_TRUE(skill);
  EXPECT_EQ(*skill, "# a skill\n");
  EXPECT_NE(access(skills.Join("probe-was-here").c_str(), F_OK), 0);
}

TEST_P(IsolationTest, WorkspaceIsWritableAndSeenOnTheHost) {
  TempDir user_data;
  ASSERT_EQ(chmod(user_data.path().c_str(), 0755), 0);
  ASSERT_NO_FATAL_FAILURE(GiveToTestUser(user_data));  // a user-data dir is its owner's
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(
      RunProbeOk({"--user-data", user_data.path()},
                 {"write", "/mnt/user-data/workspace/out.txt", "hello from the jail\n"}, &run));
  EXPECT_EQ(run.probe["ok"], true) << run.Describe();
  Result<std::string> content = ReadFile(user_data.Join("workspace/out.txt"));
  ASSERT_TRUE(content) << content.error().message();
  EXPECT_EQ(*content, "hello from the jail\n");
  for (const char* dir : {"workspace", "uploads", "outputs"}) {
    struct stat st;
    EXPECT_EQ(stat(user_data.Join(dir).c_str(), &st), 0) << dir << " not created";
  }
  // With --user-data the default working directory is the workspace.
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({"--user-data", user_data.path()}, &r));
  EXPECT_EQ(r["cwd"], "/mnt/user-data/workspace");
}

TEST_P(IsolationTest, TmpAndHomeAreWritable) {
  for (const char* path : {"/tmp/probe-file", "/home/sandbox/probe-file"}) {
    JailRun run;
    ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"write", path}, &run));
    EXPECT_EQ(run.probe["ok"], true) << path << ": " << Dump(run.probe);
  }
}

TEST_P(IsolationTest, RootAndSystemMountsAreReadOnlyAndNosuid) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  std::map<std::string, std::string> options;  // last mount wins, as in path lookup
  for (const json& m : r["mounts"]) options[m["mount_point"]] = m["options"];
  ASSERT_TRUE(options.count("/")) << Dump(r["mounts"]);
  for (const char* mount_point : {"/", "/usr", "/opt/probe/corral_probe"}) {
    if (!options.count(mount_point)) {
      ADD_FAILURE() << mount_point << " is not a mount: " << Dump(r["mounts"]);
      continue;
    }
    std::string opts = "," + options[mount_point] + ",";
    EXPECT_NE(opts.find(",ro,"), std::string::npos) << mount_point << " " << opts;
    if (std::string(mount_point) != "/") {
      EXPECT_NE(opts.find(",nosuid,"), std::string::npos) << mount_point << " " << opts;
    }
  }
}

TEST_P(IsolationTest, DangerousSyscallsAreRefused) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"try-syscalls"}, &run));
  const json& results = run.probe["results"];
  for (const char* name : {"mount_tmpfs",     "umount",
                           "unshare_user",    "unshare_mount",
                           "unshare_net",     "setns",
                           "ptrace_traceme",  "bpf",
                           "keyctl",          "add_key",
                           "perf_event_open", "io_uring_setup",
                           "userfaultfd",     "open_by_handle_at",
                           "clone_newnet",    "chroot",
                           "sethostname",     "setuid_0",
                           "capset_raise",    "kexec_file_load",
                           "finit_module",    "iopl",
                           "fsopen",          "open_tree",
                           "connect_external"}) {
    ASSERT_TRUE(results.contains(name)) << name;
    std::string result = results[name];
    EXPECT_NE(result, "ok") << name << " was allowed";
    EXPECT_NE(result, "skipped") << name;
    EXPECT_EQ(result.rfind("fork:", 0), std::string::npos) << name << ": " << result;
  }
  // Docker-format profiles answer clone3 with ENOSYS so libc falls back to clone(2),
  // whose flags the filter can see.
  EXPECT_EQ(results["clone3"], "ENOSYS");
  RecordProperty("try_syscalls", Dump(results));
}

TEST_P(IsolationTest, Int80IsKilledBySigsys) {
  Result<JailRun> run = RunProbeAsCaller({}, {"int80"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "signaled") << run->Describe();
  EXPECT_TRUE(run->probe.is_null()) << "int $0x80 returned: " << run->Describe();
  if (KernelHasIa32Emulation()) {
    // The filter, not the kernel, must be what stops it.
    EXPECT_EQ(run->outcome["signal"], 31) << run->Describe();
    EXPECT_EQ(run->run.exit_code, 128 + 31) << run->Describe();
  } else {
    // The kernel refuses the 32-bit entry itself (SIGSEGV) before the filter sees it.
    EXPECT_EQ(run->outcome["signal"], SIGSEGV) << run->Describe();
    GTEST_SKIP() << "no IA32 emulation in this kernel: int 0x80 dies of SIGSEGV in or out "
                    "of the jail, so the filter's own check cannot be seen";
  }
}

TEST_P(IsolationTest, X32SyscallIsKilled) {
  Result<JailRun> run = RunProbeAsCaller({}, {"x32"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "signaled") << run->Describe();
  EXPECT_EQ(run->outcome["signal"], 31) << run->Describe();
}

// TIOCSTI pushes characters into a terminal's input queue: a jail holding the user's
// terminal could type commands into the shell that started corral. corral runs under a pty
// here, as it would from an interactive shell.
TEST_P(IsolationTest, TerminalOfTheCallerIsNotReachable) {
  RunOptions pty;
  pty.use_pty = true;
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r, pty));
  for (const json& fd : r["fds"]) EXPECT_EQ(fd["tty"], false) << Dump(fd);
  EXPECT_NE(r["dev_tty_errno"], nullptr);

  // With -i stdin is passed through; if it arrives as the tty itself, TIOCSTI must fail.
  ASSERT_NO_FATAL_FAILURE(Report({"-i"}, &r, pty));
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({"-i"}, {"try-syscalls"}, &run, pty));
  bool any_tty = false;
  for (const json& fd : r["fds"]) {
    if (fd["tty"] != true) continue;
    any_tty = true;
    std::string key = "tiocsti_fd" + std::to_string(fd["fd"].get<int>());
    EXPECT_NE(run.probe["results"][key], "ok") << key << " injected into the caller's tty";
  }
  EXPECT_NE(r["dev_tty_errno"], nullptr) << "the caller's tty is the jail's controlling tty";
  RecordProperty("stdin_passthrough_is_tty", any_tty ? "yes" : "no");
}

// Plain mode under a pty with -i: stdin, stdout and stderr may all be the caller's terminal.
TEST_P(IsolationTest, TiocstiFailsOnAPassedThroughTerminal) {
  RunOptions pty;
  pty.use_pty = true;
  std::vector<std::string> args = ProbeRunArgs(ProbeBinary(), {"-i"}, {"try-syscalls"});
  args.erase(args.begin() + 1);  // drop --json
  Result<RunResult> run = RunCorralAsCaller(args, pty);
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->exit_code, 0) << run->Describe();
  json r = json::parse(run->out, nullptr, false);  // the tty turned \n into \r\n: whitespace
  ASSERT_TRUE(r.is_object()) << run->Describe();
  for (const char* key : {"tiocsti_fd0", "tiocsti_fd1", "tiocsti_fd2"}) {
    EXPECT_NE(r["results"][key], "ok") << key << " injected input into the caller's tty";
  }
  RecordProperty("tiocsti_plain_pty", Dump(r["results"]["tiocsti_fd0"]));
}

// A setuid-root binary bound into the jail must not raise privileges: binds are nosuid and
// no_new_privs is set. Sanity first: the copy really is setuid root on the host.
TEST_P(IsolationTest, SetuidBinaryGivesNoPrivilege) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  Result<std::string> probe = ReadFile(ProbeBinary());
  ASSERT_TRUE(probe) << probe.error().message();
  ASSERT_TRUE(dir.WriteFile("suid_probe", *probe, 04755));
  struct stat st;
  ASSERT_EQ(stat(dir.Join("suid_probe").c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, 0u);
  ASSERT_TRUE(st.st_mode & S_ISUID);
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({"-v", dir.path() + ":/opt/suid:ro"},
                                     {"setuid-test", "/opt/suid/suid_probe"}, &run));
  ASSERT_EQ(run.probe["command"], "report") << "exec of the setuid copy failed\n" << run.Describe();
  EXPECT_EQ(run.probe["euid"], 1000) << "setuid bit honoured inside the jail";
  EXPECT_EQ(run.probe["uid"], 1000);
  EXPECT_EQ(run.probe["suid"], 1000);
  EXPECT_EQ(run.probe["CapEff"], "0000000000000000");
}

TEST_P(IsolationTest, BashWorksOnTheHostBindingRoot) {
  Result<JailRun> run =
      RunJailedAsCaller({"run", "--json", "--", "bash", "-c", "id; hostname; ls /"});
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
  EXPECT_EQ(run->outcome["exit_code"], 0) << run->Describe();
  std::string out = run->outcome["stdout"];
  EXPECT_NE(out.find("uid=1000(sandbox) gid=1000(sandbox)"), std::string::npos) << out;
  EXPECT_NE(out.find("\nsandbox\n"), std::string::npos) << out;
  for (const char* entry : {"\nbin\n", "\netc\n", "\nproc\n", "\ntmp\n", "\nusr\n"}) {
    EXPECT_NE(out.find(entry), std::string::npos) << "ls / lacks " << entry << ":\n" << out;
  }
  EXPECT_EQ(run->outcome["stderr"], "") << run->Describe();
}

}  // namespace
}  // namespace corral::test
