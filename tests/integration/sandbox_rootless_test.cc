// Persistent sandboxes in rootless mode: `corral create/exec/ps/rm` as the unprivileged
// test user (tests/support/test_user.h), and as root with --rootless. Black-box through
// the corral binary; root only (the test drops to the test user itself); leak-checked.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "base/scope_guard.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_user.h"

namespace corral::test {
namespace {

using nlohmann::json;

// The pid namespace a process is in ("pid:[4026532...]"), or "" once it is gone.
std::string PidNamespaceOf(pid_t pid) {
  char buf[64];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/ns/pid").c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Whether `pid` has exited (a zombie: this test is a child subreaper, so a killed
// sandbox's processes wait here to be reaped).
bool Exited(pid_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() || (*stat)[paren + 2] == 'Z' ||
         (*stat)[paren + 2] == 'X';
}

// Host pids of every live process in pid namespace `ns`.
std::vector<pid_t> ProcessesIn(const std::string& ns) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = std::stoi(name);
    if (PidNamespaceOf(pid) == ns && !Exited(pid)) out.push_back(pid);
  }
  return out;
}

class SandboxRootlessTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto user = EnsureTestUser();
    ASSERT_TRUE(user) << user.error().message();
    user_ = *user;
    ASSERT_EQ(::chown(home_.path().c_str(), user_.uid, user_.gid), 0);
    ASSERT_TRUE(home_.MakeDirs("runtime", 0700));
    ASSERT_EQ(::chown(home_.Join("runtime").c_str(), user_.uid, user_.gid), 0);
    ASSERT_TRUE(home_.WriteFile("limits.yaml", "unsafe:\n  allow_missing_limits: true\n"));
  }
  void TearDown() override {
    for (const auto& name : user_sandboxes_) (void)AsUser({"rm", name});
    for (const auto& name : root_sandboxes_) (void)RunCorral({"rm", name});
  }

  std::string NewName() {
    static std::atomic<int> n{0};
    return "rl-" + std::to_string(getpid()) + "-" + std::to_string(++n);
  }
  std::string RuntimeDir() const { return home_.Join("runtime"); }
  std::string StateDirOf(const std::string& name) const {
    return RuntimeDir() + "/corral/sandboxes/" + name;
  }

  // `corral <args>` as the test user, with its XDG_RUNTIME_DIR; `config` (create and run:
  // the others act on what create recorded): with the config that allows running without
  // cgroup limits (a v1 host has none for the user).
  Result<RunResult> AsUser(std::vector<std::string> args, bool config = true,
                           std::vector<std::string> env = {}) {
    if (config && (args[0] == "create" || args[0] == "run")) {
      args.insert(args.begin() + 1, {"--config", home_.Join("limits.yaml")});
    }
    RunOptions options;
    options.env = {"XDG_RUNTIME_DIR=" + RuntimeDir()};
    for (auto& e : env) options.env.push_back(std::move(e));
    return RunProgram(kSetprivBinary, AsTestUser(user_, CorralBinary(), args), options);
  }

  // Creates a sandbox as the test user, the probe mounted at /opt/p.
  void CreateAsUser(const std::string& name) {
    Result<RunResult> r = AsUser({"create", "--name", name, "-v", ProbeBinary() + ":/opt/p:ro"});
    ASSERT_TRUE(r) << r.error().message();
    user_sandboxes_.push_back(name);
    ASSERT_EQ(r->exit_code, 0) << r->Describe();
    ASSERT_EQ(r->out, name + "\n");
  }

  // stdout of `exec NAME -- command...` as the test user, which must exit 0.
  void ExecAsUser(const std::string& name, const std::vector<std::string>& command,
                  std::string* out) {
    std::vector<std::string> args = {"exec", name, "--"};
    args.insert(args.end(), command.begin(), command.end());
    Result<RunResult> r = AsUser(args);
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->exit_code, 0) << r->Describe();
    *out = r->out;
  }

  // The init pid the test user's store recorded for `name`.
  pid_t InitPidOf(const std::string& name) {
    auto text = ReadFile(StateDirOf(name) + "/state.json");
    if (!text) return -1;
    json j = json::parse(*text, nullptr, false);
    return j.is_object() ? j.value("init_pid", -1) : -1;
  }

  TestUser user_;
  TempDir home_;
  std::vector<std::string> user_sandboxes_;
  std::vector<std::string> root_sandboxes_;
};

TEST_F(SandboxRootlessTest, CreateExecPsRmAsAnUnprivilegedUser) {
  const std::string name = NewName();
  ASSERT_NO_FATAL_FAILURE(CreateAsUser(name));
  // Its state is the user's, under $XDG_RUNTIME_DIR/corral.
  struct stat st;
  ASSERT_EQ(::stat(StateDirOf(name).c_str(), &st), 0) << StateDirOf(name);
  EXPECT_EQ(st.st_uid, user_.uid);
  const pid_t init = InitPidOf(name);
  ASSERT_GT(init, 0);
  const std::string ns = PidNamespaceOf(init);
  ASSERT_FALSE(ns.empty());
  ASSERT_NE(ns, PidNamespaceOf(getpid())) << "the sandbox has a pid namespace of its own";
  // On the host its init is the user's, not root's.
  ASSERT_EQ(::stat(("/proc/" + std::to_string(init)).c_str(), &st), 0);
  EXPECT_NE(st.st_uid, 0u);

  // A file written by one exec is there for the next; a background process lives on.
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ExecAsUser(
      name, {"bash", "-c", "echo kept > /tmp/f; nohup sleep 1000 >/dev/null 2>&1 &"}, &out));
  ASSERT_NO_FATAL_FAILURE(ExecAsUser(name, {"cat", "/tmp/f"}, &out));
  EXPECT_EQ(out, "kept\n");

  // The exec runs as uid 1000 inside, mapped to the caller, with no capability.
  ASSERT_NO_FATAL_FAILURE(ExecAsUser(name, {"/opt/p", "report"}, &out));
  json r = json::parse(out, nullptr, false);
  ASSERT_TRUE(r.is_object()) << out;
  EXPECT_EQ(r["uid"], 1000);
  EXPECT_EQ(r["gid"], 1000);
  EXPECT_EQ(r["CapEff"], "0000000000000000");
  EXPECT_EQ(r["CapPrm"], "0000000000000000");
  EXPECT_EQ(r["CapBnd"], "0000000000000000");
  EXPECT_EQ(r["NoNewPrivs"], 1);
  EXPECT_EQ(r["Seccomp"], 2);
  ASSERT_NO_FATAL_FAILURE(ExecAsUser(name, {"cat", "/proc/self/uid_map"}, &out));
  std::istringstream map(out);
  long inside = -1, outside = -1, count = -1;
  map >> inside >> outside >> count;
  EXPECT_EQ(inside, 1000) << out;
  EXPECT_EQ(outside, static_cast<long>(user_.uid)) << out;
  // It joined the sandbox's pid namespace: pid 1 is the init.
  ASSERT_NO_FATAL_FAILURE(ExecAsUser(name, {"cat", "/proc/1/comm"}, &out));
  EXPECT_EQ(out.rfind("corral", 0), 0u) << out;

  // ps lists it, alive.
  Result<RunResult> ps = AsUser({"ps", "--json"});
  ASSERT_TRUE(ps) << ps.error().message();
  ASSERT_EQ(ps->exit_code, 0) << ps->Describe();
  json list = json::parse(ps->out, nullptr, false);
  ASSERT_TRUE(list.is_array()) << ps->Describe();
  bool listed = false;
  for (const auto& s : list) listed = listed || s.value("name", "") == name;
  EXPECT_TRUE(listed) << ps->out;
  EXPECT_GE(ProcessesIn(ns).size(), 2u) << "the init and the background sleep";

  // From a shell with another runtime directory the sandbox is not listed, and ps says
  // that one of the user's sandboxes runs all the same, naming its init.
  ASSERT_TRUE(home_.MakeDirs("other-runtime", 0700));
  ASSERT_EQ(::chown(home_.Join("other-runtime").c_str(), user_.uid, user_.gid), 0);
  Result<RunResult> elsewhere =
      AsUser({"ps"}, true, {"CORRAL_RUNTIME_DIR=" + home_.Join("other-runtime")});
  ASSERT_TRUE(elsewhere && elsewhere->exit_code == 0) << (elsewhere ? elsewhere->Describe() : "");
  EXPECT_EQ(elsewhere->out.find(name), std::string::npos) << elsewhere->Describe();
  EXPECT_NE(elsewhere->err.find("1 more sandbox(es) of yours are running"), std::string::npos)
      << elsewhere->Describe();
  EXPECT_NE(elsewhere->err.find("init pids " + std::to_string(init)), std::string::npos)
      << elsewhere->Describe();

  // stats does not show limits that do not hold (without a delegated cgroup v2 subtree the
  // sandbox has no cgroup: allow_missing_limits).
  Result<RunResult> inspect = AsUser({"inspect", name});
  ASSERT_TRUE(inspect && inspect->exit_code == 0) << (inspect ? inspect->Describe() : "");
  Result<RunResult> stats = AsUser({"stats", name});
  ASSERT_TRUE(stats && stats->exit_code == 0) << (stats ? stats->Describe() : "");
  if (json::parse(inspect->out).value("cgroup", "") == "") {
    EXPECT_NE(stats->out.find("processes  - (not counted: no cgroup; at most 256 as RLIMIT_NPROC)"),
              std::string::npos)
        << stats->out;
    EXPECT_NE(stats->out.find("is not enforced"), std::string::npos) << stats->out;
    EXPECT_EQ(stats->out.find("/ 256"), std::string::npos) << stats->out;
  } else {
    EXPECT_NE(stats->out.find("/ 256"), std::string::npos) << stats->out;
  }

  // rm: no process of the sandbox, no state left.
  Result<RunResult> rm = AsUser({"rm", name});
  ASSERT_TRUE(rm) << rm.error().message();
  ASSERT_EQ(rm->exit_code, 0) << rm->Describe();
  user_sandboxes_.clear();
  for (int i = 0; i < 200 && !ProcessesIn(ns).empty(); ++i) ::usleep(10 * 1000);
  EXPECT_TRUE(ProcessesIn(ns).empty());
  EXPECT_NE(::stat(StateDirOf(name).c_str(), &st), 0) << "state dir left: " << StateDirOf(name);
  ps = AsUser({"ps", "--json"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  EXPECT_EQ(ps->out.find(name), std::string::npos) << ps->out;
}

// Another user's sandbox cannot be entered: not through its store (root's, 0700), and not
// with a record copied into the user's own store either, even one that claims no cgroup
// (so that the exec goes straight for the init): the kernel refuses the user the init's
// root and namespaces (a plain sandbox's belong to the host's user namespace; with
// --rootless as root, to a user namespace root owns).
TEST_F(SandboxRootlessTest, ExecIntoSomeoneElsesSandboxIsRefused) {
  for (bool rootless : {false, true}) {
    SCOPED_TRACE(rootless ? "root's sandbox with --rootless" : "root's sandbox");
    const std::string name = NewName();
    std::vector<std::string> create = {"create", "--name", name};
    if (rootless) create.push_back("--rootless");
    Result<RunResult> made = RunCorral(create);
    ASSERT_TRUE(made) << made.error().message();
    root_sandboxes_.push_back(name);
    ASSERT_EQ(made->exit_code, 0) << made->Describe();

    Result<RunResult> through_store = AsUser({"exec", name, "--", "touch", "/tmp/entered"}, true,
                                             {"CORRAL_RUNTIME_DIR=/run/corral"});
    ASSERT_TRUE(through_store) << through_store.error().message();
    EXPECT_NE(through_store->exit_code, 0) << through_store->Describe();
    EXPECT_NE(through_store->err.find("Permission denied"), std::string::npos)
        << through_store->Describe();

    // The record, copied into the user's store as if it were the user's.
    auto text = ReadFile("/run/corral/sandboxes/" + name + "/state.json");
    ASSERT_TRUE(text);
    json forged_record = json::parse(*text, nullptr, false);
    ASSERT_TRUE(forged_record.is_object()) << *text;
    forged_record["cgroup_name"] = "";
    forged_record["spec"]["unsafe"]["allow_missing_limits"] = true;
    const std::string record = forged_record.dump();
    // `ps` makes the user's store; the record goes in as the user's own would.
    ASSERT_TRUE(AsUser({"ps"}));
    const std::string forged = StateDirOf(name);
    ASSERT_EQ(::mkdir(forged.c_str(), 0700), 0) << forged;
    for (const auto& [file, content] : std::vector<std::pair<std::string, std::string>>{
             {"/state.json", record}, {"/lock", ""}, {"/last_used", ""}}) {
      std::ofstream(forged + file) << content;
    }
    for (const char* f : {"", "/state.json", "/lock", "/last_used"}) {
      ASSERT_EQ(::chown((forged + f).c_str(), user_.uid, user_.gid), 0) << forged << f;
    }
    Result<RunResult> forged_exec = AsUser({"exec", name, "--", "touch", "/tmp/entered"});
    ASSERT_TRUE(forged_exec) << forged_exec.error().message();
    EXPECT_NE(forged_exec->exit_code, 0) << forged_exec->Describe();
    std::filesystem::remove_all(forged);

    // Nothing ran in root's sandbox.
    Result<RunResult> check = RunCorral({"exec", name, "--", "test", "-e", "/tmp/entered"});
    ASSERT_TRUE(check) << check.error().message();
    EXPECT_EQ(check->exit_code, 1) << check->Describe();
  }
}

// This v1-hybrid host gives an unprivileged user no cgroup: create refuses the configured
// limits with the message `run` gives (README "Running without root"), and leaves nothing.
TEST_F(SandboxRootlessTest, CreateWithoutDelegatedCgroupIsRefusedLimits) {
  if (MemoryOnCgroupV2()) {
    CORRAL_SKIP_OR_FAIL("cgroup v2 host: the delegated-subtree test (tests/vm) applies here");
  }
  const std::string name = NewName();
  Result<RunResult> r = AsUser({"create", "--name", name}, /*config=*/false);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  for (const char* part :
       {"corral: cannot enforce limits.memory (512 MiB), limits.cpus (1) and limits.pids (256) "
        "without root: the memory controller is not on cgroup v2 here",
        "systemd-run --user --scope -p Delegate=yes corral", "systemd.unified_cgroup_hierarchy=1",
        "unsafe.allow_missing_limits: true"}) {
    EXPECT_NE(r->err.find(part), std::string::npos) << "missing \"" << part << "\" in\n" << r->err;
  }
  struct stat st;
  EXPECT_NE(::stat(StateDirOf(name).c_str(), &st), 0) << "a refused create left its state";
}

// Without XDG_RUNTIME_DIR (and no /run/user/<uid> of its own) the store says what to set.
TEST_F(SandboxRootlessTest, NoRuntimeDirectoryIsAClearError) {
  for (std::vector<std::string> command :
       {std::vector<std::string>{"exec", "somewhere", "--", "true"}, {"ps", "--json"}}) {
    std::vector<std::string> args = {"-u", "XDG_RUNTIME_DIR", "-u", "CORRAL_RUNTIME_DIR",
                                     CorralBinary()};
    args.insert(args.end(), command.begin(), command.end());
    Result<RunResult> r = RunProgram(kSetprivBinary, AsTestUser(user_, "/usr/bin/env", args));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->exit_code, 125) << r->Describe();
    EXPECT_NE(r->err.find("XDG_RUNTIME_DIR is not set"), std::string::npos) << r->Describe();
    // A directory every shell sets the same, not one per shell (which hid sandboxes).
    EXPECT_NE(r->err.find("export CORRAL_RUNTIME_DIR=~/.local/state/corral"), std::string::npos)
        << r->Describe();
  }
}

// `corral pool` as the unprivileged user: a pooled run is a rootless jail, and a pooled
// exec (an exec slot) enters a rootless sandbox.
TEST_F(SandboxRootlessTest, PoolServesRootlessRunsAndExecs) {
  const std::string socket = RuntimeDir() + "/corral/pool.sock";
  std::vector<std::string> argv =
      AsTestUser(user_, "/usr/bin/env",
                 {"XDG_RUNTIME_DIR=" + RuntimeDir(), CorralBinary(), "pool", "--config",
                  home_.Join("limits.yaml"), "--size", "1"});
  argv.insert(argv.begin(), kSetprivBinary);
  Result<pid_t> pool = StartProgram(argv);
  ASSERT_TRUE(pool) << pool.error().message();
  // kSetprivBinary execs env, which execs corral: the pid is the pool server's.
  ScopeGuard stop([&] {
    ::kill(*pool, SIGTERM);
    ::waitpid(*pool, nullptr, 0);
  });
  struct stat st;
  for (int i = 0; i < 500 && ::stat(socket.c_str(), &st) != 0; ++i) ::usleep(20 * 1000);
  ASSERT_EQ(::stat(socket.c_str(), &st), 0) << "no pool socket at " << socket;

  // Until the pool is full a run may go cold; the server answers only its own user, so
  // the test cannot wait for it directly.
  json outcome = json::object();
  for (int i = 0; i < 50 && !outcome.value("pooled", false); ++i) {
    if (i > 0) ::usleep(100 * 1000);
    Result<RunResult> run =
        AsUser({"run", "--pool", "auto", "--json", "--", "cat", "/proc/self/uid_map"});
    ASSERT_TRUE(run) << run.error().message();
    outcome = json::parse(run->out, nullptr, false);
    ASSERT_TRUE(outcome.is_object()) << run->Describe();
    ASSERT_EQ(outcome["status"], "exited") << run->Describe();
  }
  EXPECT_EQ(outcome.value("pooled", false), true) << outcome.dump();
  std::istringstream map(outcome.value("stdout", ""));
  long inside = -1, outside = -1;
  map >> inside >> outside;
  EXPECT_EQ(inside, 1000) << outcome.dump();
  EXPECT_EQ(outside, static_cast<long>(user_.uid)) << outcome.dump();

  const std::string name = NewName();
  ASSERT_NO_FATAL_FAILURE(CreateAsUser(name));
  bool pooled = false;
  for (int i = 0; i < 10 && !pooled; ++i) {  // the server prepares a slot after a first use
    Result<RunResult> exec = AsUser({"exec", "--pool", "auto", "--json", name, "--", "id", "-u"});
    ASSERT_TRUE(exec) << exec.error().message();
    json o = json::parse(exec->out, nullptr, false);
    ASSERT_TRUE(o.is_object()) << exec->Describe();
    ASSERT_EQ(o["status"], "exited") << exec->Describe();
    EXPECT_EQ(o.value("stdout", ""), "1000\n") << exec->Describe();
    pooled = o.value("pooled", false);
    if (!pooled) ::usleep(100 * 1000);
  }
  EXPECT_TRUE(pooled) << "no exec went through an exec slot";
}

// The agent tools' jail provider as the unprivileged user: bash and the file tools act in
// the thread's rootless sandbox.
TEST_F(SandboxRootlessTest, ToolLayerWorksRootless) {
  ASSERT_TRUE(home_.MakeDirs("base", 0755));
  ASSERT_EQ(::chown(home_.Join("base").c_str(), user_.uid, user_.gid), 0);
  auto tool = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"tool", "--config", home_.Join("limits.yaml"), "--base-dir",
                               home_.Join("base"), "--provider", "jail", "--thread", "t1"});
    return AsUser(args, /*config=*/false);
  };
  Result<RunResult> bash = tool({"bash", "--command", "id -u; echo from-bash > /tmp/b"});
  ASSERT_TRUE(bash) << bash.error().message();
  ASSERT_EQ(bash->exit_code, 0) << bash->Describe();
  EXPECT_NE(bash->out.find("1000"), std::string::npos) << bash->Describe();
  Result<RunResult> read = tool({"read_file", "--path", "/tmp/b"});
  ASSERT_TRUE(read && read->exit_code == 0) << (read ? read->Describe() : read.error().message());
  EXPECT_NE(read->out.find("from-bash"), std::string::npos) << read->Describe();
  Result<RunResult> write =
      tool({"write_file", "--path", "/mnt/user-data/workspace/w.txt", "--content", "from-tool"});
  ASSERT_TRUE(write && write->exit_code == 0)
      << (write ? write->Describe() : write.error().message());
  Result<RunResult> cat = tool({"bash", "--command", "cat /mnt/user-data/workspace/w.txt"});
  ASSERT_TRUE(cat && cat->exit_code == 0) << (cat ? cat->Describe() : cat.error().message());
  EXPECT_NE(cat->out.find("from-tool"), std::string::npos) << cat->Describe();
  // The thread's sandbox is the user's: its ps lists it; rm --all takes it down.
  Result<RunResult> ps = AsUser({"ps", "--json"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  EXPECT_NE(ps->out.find("\"th-"), std::string::npos) << ps->out;
  Result<RunResult> rm = AsUser({"rm", "--all"});
  ASSERT_TRUE(rm && rm->exit_code == 0) << (rm ? rm->Describe() : rm.error().message());
}

// As root, --rootless gives the sandbox a user namespace; execs join it.
TEST_F(SandboxRootlessTest, RootWithRootlessFlagCreatesAndExecs) {
  const std::string name = NewName();
  Result<RunResult> made = RunCorral({"create", "--rootless", "--name", name});
  ASSERT_TRUE(made) << made.error().message();
  root_sandboxes_.push_back(name);
  ASSERT_EQ(made->exit_code, 0) << made->Describe();
  for (int i = 0; i < 2; ++i) {
    Result<RunResult> r = RunCorral({"exec", name, "--", "cat", "/proc/self/uid_map"});
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->exit_code, 0) << r->Describe();
    std::istringstream map(r->out);
    long inside = -1, outside = -1, count = -1;
    map >> inside >> outside >> count;
    EXPECT_EQ(inside, 1000) << r->out;
    EXPECT_EQ(outside, 1000) << r->out;
    EXPECT_EQ(count, 1) << r->out;
  }
}

}  // namespace
}  // namespace corral::test
