// corral-runc (runtime/oci/runc_container.h) black-box: its own verbs on a bundle, then
// driven by its real callers — containerd 1.6 through the runc shim (`ctr run
// --runc-binary`) and podman 4 (`--runtime`). The CRI plugin's path is
// tests/integration/cri/cri_test.py. Each test builds a busybox root (busybox-static),
// starts what it needs (a containerd of its own on a socket in its temp dir; podman with
// its own storage root) and checks that killing and deleting leave nothing behind. Root
// only; leak-checked. Under CORRAL_TESTS_MUST_RUN=1 a missing ctr, containerd or podman
// fails instead of skipping.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string CorralRunc() { return PathFromEnv("CORRAL_TEST_RUNC", CORRAL_RUNC); }

// A root holding busybox and the applets the tests call.
void MakeBusyboxRoot(const fs::path& rootfs) {
  fs::create_directories(rootfs / "bin");
  fs::copy_file("/bin/busybox", rootfs / "bin/busybox", fs::copy_options::overwrite_existing);
  for (const char* applet : {"sh", "cat", "echo", "sleep", "id", "ls", "grep", "nc", "tty", "mount",
                             "head", "hostname", "true", "dd"}) {
    fs::create_symlink("busybox", rootfs / "bin" / applet);
  }
  for (const char* dir : {"proc", "sys", "dev", "tmp", "etc", "root"}) {
    fs::create_directories(rootfs / dir);
  }
}

// A bundle config like the ones containerd and podman write, for the direct tests.
json BundleConfigJson(const std::vector<std::string>& args, const std::string& cgroups_path) {
  json caps = {"CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_KILL",
               "CAP_SETUID", "CAP_SETGID",       "CAP_NET_BIND_SERVICE"};
  return {{"ociVersion", "1.0.2"},
          {"root", {{"path", "rootfs"}, {"readonly", true}}},
          {"hostname", "corral-runc-test"},
          {"process",
           {{"terminal", false},
            {"user", {{"uid", 0}, {"gid", 0}}},
            {"args", args},
            {"env", {"PATH=/bin", "TERM=xterm"}},
            {"cwd", "/"},
            {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}}},
            {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
            {"noNewPrivileges", true}}},
          {"mounts",
           {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
            {{"destination", "/dev"},
             {"type", "tmpfs"},
             {"source", "tmpfs"},
             {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
            {{"destination", "/dev/pts"},
             {"type", "devpts"},
             {"source", "devpts"},
             {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
            {{"destination", "/tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"}}}},
          {"linux",
           {{"namespaces",
             {{{"type", "pid"}},
              {{"type", "network"}},
              {{"type", "ipc"}},
              {{"type", "uts"}},
              {{"type", "mount"}}}},
            {"resources", {{"memory", {{"limit", 64 << 20}}}, {"pids", {{"limit", 64}}}}},
            {"cgroupsPath", cgroups_path}}}};
}

void WriteJson(const fs::path& path, const json& doc) { std::ofstream(path) << doc.dump(2); }

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every cgroup directory under any hierarchy's `parent` (its own directory excluded).
std::vector<std::string> CgroupsUnder(const std::string& parent) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& hierarchy : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    fs::path dir = hierarchy.path() / parent;
    std::error_code ec2;
    for (const auto& e : fs::directory_iterator(dir, ec2)) {
      if (e.is_directory()) out.push_back(e.path());
    }
  }
  return out;
}

void RemoveCgroupParent(const std::string& parent) {
  std::error_code ec;
  for (const auto& hierarchy : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    ::rmdir((hierarchy.path() / parent).c_str());
  }
}

// Every mount point in this process's mount namespace: the leak checker looks only where
// corral mounts, and podman mounts elsewhere (its default store) when it is let.
std::multiset<std::string> MountPoints() {
  std::multiset<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    out.insert(point);
  }
  return out;
}

// The program's path on $PATH ("" if none): RunProgram takes a path.
std::string Which(const std::string& name) {
  auto r = RunProgram("/bin/sh", {"-c", "command -v \"$0\"", name});
  if (!r || !r->exited || r->exit_code != 0) return "";
  std::string path = r->out;
  while (!path.empty() && path.back() == '\n') path.pop_back();
  return path;
}
bool HasProgram(const std::string& name) { return !Which(name).empty(); }

class RuncCompatTest : public LeakCheckedTest {
 protected:
  void SetUp() override {
    RequireRoot();
    if (HasFatalFailure() || IsSkipped()) return;
    if (!fs::exists("/bin/busybox")) CORRAL_SKIP_OR_FAIL("needs busybox-static");
    dir_ = std::make_unique<TempDir>();
    rootfs_ = fs::path(dir_->path()) / "bundle/rootfs";
    MakeBusyboxRoot(rootfs_);
    state_root_ = fs::path(dir_->path()) / "state";
  }
  void TearDown() override { RemoveCgroupParent(cgroup_parent_); }

  Result<RunResult> Runc(const std::vector<std::string>& args, const RunOptions& options = {}) {
    std::vector<std::string> all = {"--root", state_root_};
    all.insert(all.end(), args.begin(), args.end());
    return RunProgram(CorralRunc(), all, options);
  }
  json State(const std::string& id) {
    auto r = Runc({"state", id});
    if (!r || r->exit_code != 0) return json();
    return json::parse(r->out, nullptr, false);
  }

  std::unique_ptr<TempDir> dir_;
  fs::path rootfs_;
  fs::path state_root_;
  std::string cgroup_parent_ = "corral-runc-test-" + std::to_string(::getpid());
};

TEST_F(RuncCompatTest, CreateStartStateKillDeleteOnABundle) {
  const fs::path bundle = rootfs_.parent_path();
  const fs::path out = fs::path(dir_->path()) / "out";
  WriteJson(bundle / "config.json",
            BundleConfigJson({"sh", "-c",
                              "echo started; hostname; id; grep -E '^(CapEff|NoNewPrivs|Seccomp):' "
                              "/proc/self/status; cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
                              "2>/dev/null; exec sleep 600"},
                             "/" + cgroup_parent_ + "/c1"));
  const fs::path pid_file = fs::path(dir_->path()) / "c1.pid";
  // The container keeps create's stdout: a file, so that nothing waits for its end.
  auto created =
      RunProgram("/bin/sh", {"-c",
                             "exec \"$0\" --root \"$1\" create --bundle \"$2\" --pid-file "
                             "\"$3\" c1 >\"$4\" 2>&1",
                             CorralRunc(), state_root_, bundle, pid_file, out});
  ASSERT_TRUE(created && created->exit_code == 0) << created->Describe() << ReadText(out);
  json state = State("c1");
  ASSERT_EQ(state.value("status", ""), "created") << state.dump();
  const pid_t pid = std::stoi(ReadText(pid_file));
  EXPECT_EQ(state["pid"], pid);
  EXPECT_EQ(state["bundle"], bundle.string());
  EXPECT_EQ(ReadText(out), "") << "the process ran before start";

  auto started = Runc({"start", "c1"});
  ASSERT_TRUE(started && started->exit_code == 0) << started->Describe();
  EXPECT_EQ(State("c1").value("status", ""), "running");
  for (int i = 0; i < 100 && ReadText(out).find("Seccomp") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string text = ReadText(out);
  EXPECT_NE(text.find("started\ncorral-runc-test\nuid=0 gid=0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("NoNewPrivs:\t1"), std::string::npos) << text;
  EXPECT_NE(text.find("Seccomp:\t2"), std::string::npos) << text;  // corral's default profile
  EXPECT_NE(text.find("CapEff:\t00000000000004e3"), std::string::npos) << text;

  // exec: a second process in the same namespaces, exit code passed through.
  auto exec = Runc({"exec", "c1", "sh", "-c", "hostname; exit 7"});
  ASSERT_TRUE(exec) << exec.error().message();
  EXPECT_EQ(exec->exit_code, 7) << exec->Describe();
  EXPECT_EQ(exec->out, "corral-runc-test\n");

  // update: the limit changes in place; events --stats: the cgroup's figures.
  RunOptions resources;
  resources.stdin_data = R"({"memory": {"limit": 33554432}})";
  auto update = Runc({"update", "--resources", "-", "c1"}, resources);
  ASSERT_TRUE(update && update->exit_code == 0) << update->Describe();
  const std::string v1_limit =
      "/sys/fs/cgroup/memory/" + cgroup_parent_ + "/c1/memory.limit_in_bytes";
  const std::string v2_limit = "/sys/fs/cgroup/" + cgroup_parent_ + "/c1/memory.max";
  EXPECT_EQ(ReadText(fs::exists(v1_limit) ? v1_limit : v2_limit), "33554432\n");
  auto events = Runc({"events", "--stats", "c1"});
  ASSERT_TRUE(events && events->exit_code == 0) << events->Describe();
  json event = json::parse(events->out, nullptr, false);
  EXPECT_EQ(event.value("type", ""), "stats") << events->out;
  EXPECT_GE(event["data"]["pids"].value("current", 0), 1) << events->out;

  auto pause = Runc({"pause", "c1"});
  ASSERT_TRUE(pause && pause->exit_code == 0) << pause->Describe();
  EXPECT_EQ(State("c1").value("status", ""), "paused");
  ASSERT_EQ(Runc({"resume", "c1"})->exit_code, 0);
  auto refused = Runc({"delete", "c1"});
  EXPECT_NE(refused->exit_code, 0);
  EXPECT_NE(refused->err.find("not stopped: running"), std::string::npos) << refused->err;

  ASSERT_EQ(Runc({"kill", "c1", "KILL"})->exit_code, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);  // we are the subreaper (LeakChecker)
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(State("c1").value("status", ""), "stopped");
  auto deleted = Runc({"delete", "c1"});
  ASSERT_TRUE(deleted && deleted->exit_code == 0) << deleted->Describe();
  EXPECT_FALSE(fs::exists(state_root_ / "c1"));
  EXPECT_TRUE(CgroupsUnder(cgroup_parent_).empty());
  EXPECT_EQ(Runc({"delete", "--force", "c1"})->exit_code, 0) << "runc's --force on a gone one";
  EXPECT_NE(Runc({"state", "c1"})->exit_code, 0);
}

TEST_F(RuncCompatTest, RefusesWhatItCannotHonourNamingTheField) {
  const fs::path bundle = rootfs_.parent_path();
  json config = BundleConfigJson({"true"}, "/" + cgroup_parent_ + "/c2");
  config["linux"]["intelRdt"] = {{"closID", "x"}};
  WriteJson(bundle / "config.json", config);
  auto r = Runc({"create", "--bundle", bundle, "c2"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->err.find("config.json: linux.intelRdt"), std::string::npos) << r->err;
  EXPECT_FALSE(fs::exists(state_root_ / "c2"));

  config = BundleConfigJson({"true"}, "/" + cgroup_parent_ + "/c2");
  config["linux"]["sysctl"] = {{"kernel.panic", "1"}};
  WriteJson(bundle / "config.json", config);
  r = Runc({"create", "--bundle", bundle, "c2"});
  EXPECT_NE(r->err.find("linux.sysctl.kernel.panic: not a namespaced sysctl"), std::string::npos)
      << r->err;
  EXPECT_TRUE(CgroupsUnder(cgroup_parent_).empty());
}

// A symlink in the image aimed at a host directory: the config's mount below it lands
// inside the root, and the host directory is untouched.
TEST_F(RuncCompatTest, AMountUnderASymlinkStaysInsideTheRoot) {
  const fs::path host_target = fs::path(dir_->path()) / "host-target";
  fs::create_directories(host_target);
  fs::create_directory_symlink(host_target, rootfs_ / "etc/evil");
  const fs::path bundle = rootfs_.parent_path();
  // Inside, the mount point is the link's target spelled inside the root.
  const std::string inside = (host_target / "inside").string();
  json config = BundleConfigJson({"sh", "-c", "grep -c ' " + inside + " ' /proc/self/mountinfo"},
                                 "/" + cgroup_parent_ + "/c3");
  config["root"]["readonly"] = false;
  config["mounts"].erase(3);  // no tmpfs at /tmp: the target's directories land in rootfs/tmp
  config["mounts"].push_back(
      {{"destination", "/etc/evil/inside"}, {"type", "tmpfs"}, {"source", "tmpfs"}});
  WriteJson(bundle / "config.json", config);
  auto r = Runc({"run", "--bundle", bundle, "c3"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, "1\n");
  EXPECT_TRUE(fs::is_empty(host_target)) << "a mount point was made on the host";
  EXPECT_TRUE(fs::is_directory(rootfs_ / host_target.relative_path() / "inside"));
  EXPECT_FALSE(fs::exists(state_root_ / "c3"));
}

// containerd's own daemon on a socket in the test's directory, the CRI plugin off.
class Containerd {
 public:
  explicit Containerd(const fs::path& dir) : dir_(dir) {
    std::ofstream(dir / "containerd.toml")
        << "version = 2\nroot = \"" << (dir / "root").string() << "\"\nstate = \""
        << (dir / "state").string() << "\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"
        << "[grpc]\n  address = \"" << socket() << "\"\n[ttrpc]\n  address = \"" << socket()
        << ".ttrpc\"\n";
    auto pid =
        StartProgram({"/bin/sh", "-c", "exec containerd --config \"$0\" >\"$1\" 2>&1",
                      (dir / "containerd.toml").string(), (dir / "containerd.log").string()});
    if (pid) pid_ = *pid;
    for (int i = 0; i < 200 && !Ready(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~Containerd() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  std::string socket() const { return (dir_ / "containerd.sock").string(); }
  bool Ready() const {
    auto r = RunProgram(Which("ctr"), {"-a", socket(), "version"});
    return r && r->exit_code == 0;
  }
  std::string Log() const { return ReadText(dir_ / "containerd.log"); }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
};

TEST_F(RuncCompatTest, CtrRunsContainersThroughTheRuncShim) {
  if (!HasProgram("containerd") || !HasProgram("ctr") || !HasProgram("containerd-shim-runc-v2")) {
    CORRAL_SKIP_OR_FAIL("needs containerd (Debian package containerd)");
  }
  Containerd daemon(dir_->path());
  ASSERT_TRUE(daemon.Ready()) << daemon.Log();
  const std::string ns = cgroup_parent_;  // ctr's cgroupsPath is /<namespace>/<id>
  auto ctr = [&](std::vector<std::string> args, RunOptions options = {}) {
    args.insert(args.begin(), {"-a", daemon.socket(), "-n", ns});
    return RunProgram(Which("ctr"), args, options);
  };
  const std::vector<std::string> runtime = {"--runc-binary", CorralRunc(), "--rootfs"};

  std::vector<std::string> run = {"run", "--rm"};
  run.insert(run.end(), runtime.begin(), runtime.end());
  run.insert(run.end(), {rootfs_.string(), "once", "sh", "-c", "echo hello; exit 3"});
  auto once = ctr(run);
  ASSERT_TRUE(once) << once.error().message();
  EXPECT_EQ(once->exit_code, 3) << once->Describe() << daemon.Log();
  EXPECT_EQ(once->out, "hello\n");

  std::vector<std::string> detached = {"run", "-d", "--memory-limit", "67108864"};
  detached.insert(detached.end(), runtime.begin(), runtime.end());
  detached.insert(detached.end(), {rootfs_.string(), "long", "sleep", "600"});
  ASSERT_EQ(ctr(detached)->exit_code, 0) << daemon.Log();
  // ctr's spec has no cgroup mount: the limit is read on the host, in /<namespace>/<id>.
  const std::string v1_limit = "/sys/fs/cgroup/memory/" + ns + "/long/memory.limit_in_bytes";
  const std::string v2_limit = "/sys/fs/cgroup/" + ns + "/long/memory.max";
  EXPECT_EQ(ReadText(fs::exists(v1_limit) ? v1_limit : v2_limit), "67108864\n");
  auto exec = ctr({"task", "exec", "--exec-id", "e1", "long", "sh", "-c", "echo in; exit 4"});
  EXPECT_EQ(exec->exit_code, 4) << exec->Describe();
  EXPECT_EQ(exec->out, "in\n");
  RunOptions pty;
  pty.use_pty = true;
  auto tty = ctr({"task", "exec", "-t", "--exec-id", "e2", "long", "tty"}, pty);
  EXPECT_EQ(tty->exit_code, 0) << tty->Describe();
  EXPECT_NE(tty->out.find("/dev/pts/0"), std::string::npos) << tty->out;
  auto ps = ctr({"task", "ps", "long"});
  EXPECT_EQ(ps->exit_code, 0) << ps->Describe();
  ASSERT_EQ(ctr({"task", "pause", "long"})->exit_code, 0);
  EXPECT_NE(ctr({"task", "ls"})->out.find("PAUSED"), std::string::npos);
  ASSERT_EQ(ctr({"task", "resume", "long"})->exit_code, 0);
  ASSERT_EQ(ctr({"task", "kill", "-s", "KILL", "long"})->exit_code, 0);
  for (int i = 0; i < 100 && ctr({"task", "ls"})->out.find("STOPPED") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ctr({"task", "rm", "long"})->exit_code, 0);
  EXPECT_EQ(ctr({"container", "rm", "long"})->exit_code, 0);
  EXPECT_TRUE(CgroupsUnder(ns).empty());
  const fs::path shim_root = "/run/containerd/runc/" + ns;
  EXPECT_TRUE(!fs::exists(shim_root) || fs::is_empty(shim_root));
  std::error_code ec;
  fs::remove(shim_root, ec);
}

TEST_F(RuncCompatTest, PodmanRunsContainersAndPodsWithCorralRunc) {
  if (!HasProgram("podman") || !HasProgram("conmon")) {
    CORRAL_SKIP_OR_FAIL("needs podman (Debian package podman)");
  }
  const fs::path dir = dir_->path();
  const std::multiset<std::string> mounts_before = MountPoints();
  // podman's cgroupfs parent for containers and conmon: removed at the end if it is new.
  const bool had_libpod_parent = fs::exists("/sys/fs/cgroup/memory/libpod_parent") ||
                                 fs::exists("/sys/fs/cgroup/libpod_parent");
  struct LibpodParentCleanup {
    bool keep;
    ~LibpodParentCleanup() {
      if (keep) return;
      for (const std::string& child : CgroupsUnder("libpod_parent")) ::rmdir(child.c_str());
      RemoveCgroupParent("libpod_parent");
    }
  } libpod_parent_cleanup{had_libpod_parent};
  // podman makes its blob cache in /var/lib/containers whatever --root says.
  const bool had_var_lib_containers = fs::exists("/var/lib/containers");
  struct VarLibContainersCleanup {
    bool keep;
    ~VarLibContainersCleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all("/var/lib/containers", ec);
    }
  } var_lib_containers_cleanup{had_var_lib_containers};
  ASSERT_EQ(RunProgram(Which("tar"), {"-C", rootfs_, "-cf", dir / "rootfs.tar", "."})->exit_code,
            0);
  // podman's own storage and run state in the test's directory; cgroupfs directly (this
  // test needs no systemd). Its containers.conf keeps the rlimits low: a host without
  // CAP_SYS_RESOURCE (some CI sandboxes) cannot raise podman's default of 1048576 files.
  const std::vector<std::string> base = {
      "--root",     dir / "storage",    "--runroot", dir / "run",        "--runtime",
      CorralRunc(), "--cgroup-manager", "cgroupfs",  "--events-backend", "none"};
  std::ofstream(dir / "containers.conf")
      << "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n";
  auto podman = [&](std::vector<std::string> args, RunOptions options = {}) {
    args.insert(args.begin(), base.begin(), base.end());
    options.env.push_back("CONTAINERS_CONF=" + (dir / "containers.conf").string());
    return RunProgram(Which("podman"), args, options);
  };
  ASSERT_EQ(podman({"import", dir / "rootfs.tar", "localhost/corral-runc-test"})->exit_code, 0);
  // The pods' infra container: podman's own pause image would be built from catatonit.
  ASSERT_EQ(podman({"import", "--change", "ENTRYPOINT [\"/bin/sleep\", \"3600\"]",
                    dir / "rootfs.tar", "localhost/corral-runc-pause"})
                ->exit_code,
            0);

  std::vector<std::string> run = {"run", "--rm", "--network", "none", "-m", "64m"};
  run.insert(run.end(), {"localhost/corral-runc-test", "sh", "-c",
                         "echo hi; cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
                         "/sys/fs/cgroup/memory.max 2>/dev/null; exit 5"});
  auto once = podman(run);
  ASSERT_TRUE(once);
  EXPECT_EQ(once->exit_code, 5) << once->Describe();
  EXPECT_EQ(once->out, "hi\n67108864\n");

  RunOptions pty;
  pty.use_pty = true;
  std::vector<std::string> tty_run = {"run", "--rm", "-t", "--network", "none"};
  tty_run.insert(tty_run.end(), {"localhost/corral-runc-test", "tty"});
  auto tty = podman(tty_run, pty);
  EXPECT_EQ(tty->exit_code, 0) << tty->Describe();
  EXPECT_NE(tty->out.find("/dev/pts/0"), std::string::npos) << tty->out;

  // Two containers of one pod share its network namespace: localhost reaches across.
  ASSERT_EQ(podman({"pod", "create", "--name", "corral-pod", "--network", "none", "--infra-image",
                    "localhost/corral-runc-pause"})
                ->exit_code,
            0);
  std::vector<std::string> server = {"run", "-d", "--pod", "corral-pod", "--name", "server"};
  server.insert(server.end(), {"localhost/corral-runc-test", "sh", "-c",
                               "while :; do echo from-server | nc -l -p 8080; done"});
  auto started = podman(server);
  ASSERT_EQ(started->exit_code, 0) << started->Describe();
  auto exec = podman({"exec", "server", "sh", "-c", "echo exec-ok; exit 6"});
  EXPECT_EQ(exec->exit_code, 6) << exec->Describe();
  EXPECT_EQ(exec->out, "exec-ok\n");
  std::vector<std::string> client = {"run", "--rm", "--pod", "corral-pod"};
  client.insert(client.end(), {"localhost/corral-runc-test", "sh", "-c",
                               "for i in 1 2 3 4 5 6 7 8 9 10; do nc 127.0.0.1 8080 </dev/null "
                               "&& exit 0; sleep 0.2; done; exit 1"});
  auto fetched = podman(client);
  EXPECT_EQ(fetched->exit_code, 0) << fetched->Describe();
  EXPECT_EQ(fetched->out, "from-server\n");
  EXPECT_EQ(podman({"pod", "rm", "-f", "-t", "0", "corral-pod"})->exit_code, 0);
  EXPECT_EQ(
      podman({"rmi", "-f", "localhost/corral-runc-test", "localhost/corral-runc-pause"})->exit_code,
      0);
  auto left = podman({"ps", "-a", "-q"});
  EXPECT_EQ(left->out, "");
  // podman keeps its storage's overlay directory mounted over itself: let go of it. (No
  // `podman system reset`: it works on the default store in /var/lib/containers too.)
  ::umount2((dir / "storage/overlay").c_str(), MNT_DETACH);
  EXPECT_EQ(MountPoints(), mounts_before) << "podman or corral-runc left a mount behind";
}

}  // namespace
}  // namespace corral::test
