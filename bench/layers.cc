#include "bench/layers.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/files.h"
#include "base/unique_fd.h"
#include "jail/seccomp.h"

namespace corral::bench {

std::vector<std::unique_ptr<Launcher>> MakeCorralRungs(const std::string& corral_exe);

namespace {

enum class Rung { kBare = 1, kNamespaces, kNet, kRoot, kCgroup, kSeccomp };

// Steps the child can fail at; reported to the parent as {step, errno}.
enum ChildStep : int {
  kStepWait = 1,
  kStepPrivate,
  kStepLo,
  kStepTmpfs,
  kStepBindUsr,
  kStepProc,
  kStepDev,
  kStepPivot,
  kStepRootRo,
  kStepCgroupNs,
  kStepNoNewPrivs,
  kStepSeccomp,
  kStepExec
};
const char* StepName(int step) {
  static const char* kNames[] = {
      "?",   "wait",       "make-private", "lo-up",     "tmpfs",        "bind-usr", "proc",
      "dev", "pivot_root", "root-ro",      "cgroup-ns", "no_new_privs", "seccomp",  "execve"};
  return step > 0 && step <= kStepExec ? kNames[step] : "?";
}

constexpr const char* kCgroupControllers[] = {"memory", "cpu", "pids"};

// Everything the child needs, resolved in the parent: the child only makes syscalls.
struct ChildArgs {
  Rung rung;
  int report_fd;  // CLOEXEC: EOF on a successful execve
  int wait_fd;    // read end; parent closes the write end once the cgroup is joined
  int wait_w_fd;  // the child's inherited copy of the write end, closed first
  const char* root;
  char* const* argv;
  char* const* envp;
  const jail::SeccompProgram* seccomp;
};

[[noreturn]] void ChildFail(const ChildArgs& a, int step) {
  int rec[2] = {step, errno};
  (void)!write(a.report_fd, rec, sizeof(rec));
  _exit(127);
}

int BringUpLoopback() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof(ifr));
  memcpy(ifr.ifr_name, "lo", 3);
  ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
  int rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
  close(fd);
  return rc;
}

// Fresh root: a tmpfs holding /usr (read-only bind), the merged-usr symlinks, a new /proc
// and /dev/null; then pivot_root and detach the old root. Paths are relative to the cwd
// (the new root) so nothing needs formatting in the child.
void BuildRoot(const ChildArgs& a) {
  if (mount("tmpfs", a.root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0)
    ChildFail(a, kStepTmpfs);
  if (chdir(a.root) != 0) ChildFail(a, kStepTmpfs);
  mkdir("usr", 0755);
  mkdir("proc", 0555);
  mkdir("dev", 0755);
  mkdir("tmp", 01777);
  mkdir(".old", 0700);
  symlink("usr/bin", "bin");
  symlink("usr/lib", "lib");
  symlink("usr/lib64", "lib64");
  symlink("usr/sbin", "sbin");
  if (mount("/usr", "usr", nullptr, MS_BIND | MS_REC, nullptr) != 0) ChildFail(a, kStepBindUsr);
  // A bind mount takes its flags only from a remount.
  if (mount(nullptr, "usr", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
            nullptr) != 0)
    ChildFail(a, kStepBindUsr);
  if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    ChildFail(a, kStepProc);
  int nfd = open("dev/null", O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
  if (nfd >= 0) close(nfd);
  if (mount("/dev/null", "dev/null", nullptr, MS_BIND, nullptr) != 0) ChildFail(a, kStepDev);
  if (syscall(SYS_pivot_root, ".", ".old") != 0) ChildFail(a, kStepPivot);
  if (chdir("/") != 0) ChildFail(a, kStepPivot);
  if (umount2("/.old", MNT_DETACH) != 0) ChildFail(a, kStepPivot);
  rmdir("/.old");
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
    ChildFail(a, kStepRootRo);
}

[[noreturn]] void ChildMain(const ChildArgs& a) {
  if (a.wait_fd >= 0) {
    close(a.wait_w_fd);
    char c;
    while (read(a.wait_fd, &c, 1) < 0 && errno == EINTR) {
    }
  }
  if (a.rung >= Rung::kNamespaces &&
      mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    ChildFail(a, kStepPrivate);
  if (a.rung >= Rung::kNet && BringUpLoopback() != 0) ChildFail(a, kStepLo);
  if (a.rung >= Rung::kCgroup && unshare(CLONE_NEWCGROUP) != 0) ChildFail(a, kStepCgroupNs);
  if (a.rung >= Rung::kRoot) BuildRoot(a);
  if (a.rung >= Rung::kSeccomp) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail(a, kStepNoNewPrivs);
    int err = jail::InstallSeccomp(*a.seccomp);
    if (err != 0) {
      errno = err;
      ChildFail(a, kStepSeccomp);
    }
  }
  execve(a.argv[0], a.argv, a.envp);
  ChildFail(a, kStepExec);
}

class LadderLauncher : public Launcher {
 public:
  explicit LadderLauncher(Rung rung) : rung_(rung) {}

  std::string name() const override {
    switch (rung_) {
      case Rung::kBare:
        return "bare fork+exec";
      case Rung::kNamespaces:
        return "+pid/mnt/uts/ipc ns";
      case Rung::kNet:
        return "+net ns";
      case Rung::kRoot:
        return "+fresh root, pivot_root";
      case Rung::kCgroup:
        return "+cgroup with limits";
      case Rung::kSeccomp:
        return "+seccomp";
    }
    return "?";
  }
  std::string group() const override { return "layer"; }
  // What the rung adds, and to what: each rung does everything the one before it does
  // (ChildMain and Launch test `rung_ >= ...`), so +seccomp runs with the cgroup too.
  std::string description() const override {
    switch (rung_) {
      case Rung::kBare:
        return "rung 1: fork(), execve(), waitpid()";
      case Rung::kNamespaces:
        return "rung 2 = rung 1 + new pid, mount, uts and ipc namespaces (clone), mounts "
               "made private";
      case Rung::kNet:
        return "rung 3 = rung 2 + a new network namespace, lo brought up";
      case Rung::kRoot:
        return "rung 4 = rung 3 + a tmpfs root (/usr bound read-only, fresh /proc, "
               "/dev/null), pivot_root, old root detached, root read-only";
      case Rung::kCgroup:
        return "rung 5 = rung 4 + a cgroup per run (memory, cpu, pids at corral's default "
               "limits) joined before execve, removed after; a cgroup namespace";
      case Rung::kSeccomp:
        return "rung 6 = rung 5 + no_new_privs and corral's default seccomp filter";
    }
    return "?";
  }
  bool thread_safe() const override { return rung_ == Rung::kBare; }

  Status Prepare() override;
  void Cleanup() override;
  Status Launch(const Workload& w) override;

 private:
  unsigned long CloneFlags() const;
  Result<std::vector<std::string>> MakeCgroups(int n);
  Status AttachAndRelease(const std::vector<std::string>& dirs, pid_t pid, UniqueFd release);

  Rung rung_;
  std::string root_dir_;       // empty mount point for the tmpfs root (rung >= 4)
  std::string cgroup_parent_;  // relative to each controller's mount (rung >= 5)
  std::vector<std::string> controller_roots_;
  jail::SeccompProgram seccomp_;
  std::atomic<int> counter_{0};
};

unsigned long LadderLauncher::CloneFlags() const {
  unsigned long flags = 0;
  if (rung_ >= Rung::kNamespaces) flags |= CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC;
  if (rung_ >= Rung::kNet) flags |= CLONE_NEWNET;
  return flags;
}

Status LadderLauncher::Prepare() {
  if (rung_ >= Rung::kRoot) {
    char tmpl[] = "/tmp/corral-bench-root.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Error::FromErrno(errno, "mkdtemp");
    root_dir_ = tmpl;
  }
  if (rung_ >= Rung::kCgroup) {
    // Not "corral-*": the test suites' leak checkers treat new corral-* cgroups that
    // appear during their runs as theirs and remove them.
    cgroup_parent_ = "isolation-bench-" + std::to_string(getpid()) + "-" +
                     std::to_string(static_cast<int>(rung_));
    // v1 (hybrid hosts): one directory per controller hierarchy; v2: one directory.
    if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
      controller_roots_.push_back("/sys/fs/cgroup");
    } else {
      for (const char* c : kCgroupControllers) {
        std::string root = std::string("/sys/fs/cgroup/") + c;
        if (access((root + "/cgroup.procs").c_str(), F_OK) != 0)
          return Error(ErrorCode::kUnsupported, "no cgroup v1 controller " + root);
        controller_roots_.push_back(root);
      }
    }
    for (const auto& root : controller_roots_) {
      std::string dir = root + "/" + cgroup_parent_;
      if (mkdir(dir.c_str(), 0755) != 0) return Error::FromErrno(errno, "mkdir " + dir);
    }
  }
  if (rung_ >= Rung::kSeccomp) {
    ASSIGN_OR_RETURN(std::string text, jail::BuiltinSeccompProfileText("default"));
    ASSIGN_OR_RETURN(seccomp_, jail::CompileSeccompProfile(text, "seccomp profile default"));
  }
  return Ok();
}

void LadderLauncher::Cleanup() {
  for (const auto& root : controller_roots_) rmdir((root + "/" + cgroup_parent_).c_str());
  controller_roots_.clear();
  if (!root_dir_.empty()) rmdir(root_dir_.c_str());
  root_dir_.clear();
}

// One cgroup per run with corral's default limits, as `corral run` creates one per run.
Result<std::vector<std::string>> LadderLauncher::MakeCgroups(int n) {
  std::vector<std::string> dirs;
  for (const auto& root : controller_roots_) {
    std::string dir = root + "/" + cgroup_parent_ + "/run-" + std::to_string(n);
    // Someone else's cleanup may have removed the (empty) parent meanwhile: recreate it.
    if (mkdir(dir.c_str(), 0755) != 0 && errno == ENOENT)
      mkdir((root + "/" + cgroup_parent_).c_str(), 0755);
    if (access(dir.c_str(), F_OK) != 0 && mkdir(dir.c_str(), 0755) != 0) {
      for (const auto& d : dirs) rmdir(d.c_str());
      return Error::FromErrno(errno, "mkdir " + dir);
    }
    dirs.push_back(dir);
  }
  const bool v2 = controller_roots_.size() == 1;
  auto set = [&](size_t i, const char* file, const char* value) {
    return WriteFile(dirs[v2 ? 0 : i] + "/" + file, value);
  };
  Status s = v2 ? set(0, "memory.max", "536870912") : set(0, "memory.limit_in_bytes", "536870912");
  if (s) s = v2 ? set(0, "cpu.max", "100000 100000") : set(1, "cpu.cfs_quota_us", "100000");
  if (s) s = set(2, "pids.max", "256");
  if (!s) {
    for (const auto& d : dirs) rmdir(d.c_str());
    return s.error();
  }
  return dirs;
}

Status LadderLauncher::AttachAndRelease(const std::vector<std::string>& dirs, pid_t pid,
                                        UniqueFd release) {
  for (const auto& d : dirs) RETURN_IF_ERROR(WriteFile(d + "/cgroup.procs", std::to_string(pid)));
  release.Reset();
  return Ok();
}

Status LadderLauncher::Launch(const Workload& w) {
  std::vector<char*> argv;
  for (const auto& a : w.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  static char kPath[] = "PATH=/usr/bin:/bin";
  char* envp[] = {kPath, nullptr};

  const int n = counter_.fetch_add(1);
  std::vector<std::string> cgroup_dirs;
  if (rung_ >= Rung::kCgroup) {
    ASSIGN_OR_RETURN(cgroup_dirs, MakeCgroups(n));
  }
  int report[2], wait_pipe[2] = {-1, -1};
  if (pipe2(report, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd report_r(report[0]), report_w(report[1]);
  UniqueFd wait_r, wait_w;
  if (!cgroup_dirs.empty()) {
    if (pipe2(wait_pipe, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
    wait_r.Reset(wait_pipe[0]);
    wait_w.Reset(wait_pipe[1]);
  }
  ChildArgs args{rung_,       report_w.get(), wait_r.get(), wait_w.get(), root_dir_.c_str(),
                 argv.data(), envp,           &seccomp_};
  // A raw clone without CLONE_VM behaves like fork() and accepts namespace flags.
  pid_t pid = rung_ == Rung::kBare
                  ? fork()
                  : static_cast<pid_t>(syscall(SYS_clone, CloneFlags() | SIGCHLD, nullptr, nullptr,
                                               nullptr, nullptr));
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
    }
    ChildMain(args);
  }
  if (pid < 0) {
    int err = errno;
    for (const auto& d : cgroup_dirs) rmdir(d.c_str());
    return Error::FromErrno(err, "clone");
  }
  report_w.Reset();
  wait_r.Reset();
  Status attached = Ok();
  if (!cgroup_dirs.empty()) attached = AttachAndRelease(cgroup_dirs, pid, std::move(wait_w));
  if (!attached) kill(pid, SIGKILL);
  int rec[2] = {0, 0};
  ssize_t got;
  while ((got = read(report_r.get(), rec, sizeof(rec))) < 0 && errno == EINTR) {
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (const auto& d : cgroup_dirs) rmdir(d.c_str());
  RETURN_IF_ERROR(attached);
  if (got == static_cast<ssize_t>(sizeof(rec)))
    return Error::FromErrno(rec[1], name() + ": child failed at " + StepName(rec[0]));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error(ErrorCode::kIo,
                 name() + ": workload did not exit 0 (status " + std::to_string(status) + ")");
  return Ok();
}

}  // namespace

std::vector<std::unique_ptr<Launcher>> MakeLadder(const std::string& corral_exe) {
  std::vector<std::unique_ptr<Launcher>> out;
  for (Rung r :
       {Rung::kBare, Rung::kNamespaces, Rung::kNet, Rung::kRoot, Rung::kCgroup, Rung::kSeccomp}) {
    out.push_back(std::make_unique<LadderLauncher>(r));
  }
  for (auto& l : MakeCorralRungs(corral_exe)) out.push_back(std::move(l));
  return out;
}

}  // namespace corral::bench
