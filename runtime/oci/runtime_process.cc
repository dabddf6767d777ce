#include "runtime/oci/runtime_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd_pair.h"
#include "base/unique_fd.h"
#include "runtime/oci/oci_bundle.h"

namespace corral::runtime::oci {
namespace {

// Child side, after fork: stdio, the init's report pipe as fd 3 when there is one (`run
// --preserve-fds 1` hands it to the container), the private mount namespace crun needs
// here, signals back to their defaults (corral's SignalGuard blocks some), exec.
// Async-signal-safe.
[[noreturn]] void ExecRuntime(const OciRuntime& rt, const Argv& argv, int in, int out, int err,
                              int init_report = -1) {
  if ((in != 0 && ::dup2(in, 0) < 0) || (out != 1 && ::dup2(out, 1) < 0) ||
      (err != 2 && ::dup2(err, 2) < 0)) {
    ::_exit(126);
  }
  if (init_report >= 0) {
    // dup2 onto itself would keep O_CLOEXEC; stdio (0-2) is already in place, so fd 3 is
    // free to take.
    if (init_report < kContainerReportFd) ::_exit(126);
    if (init_report == kContainerReportFd ? ::fcntl(init_report, F_SETFD, 0) != 0
                                          : ::dup2(init_report, kContainerReportFd) < 0) {
      ::_exit(126);
    }
  }
  if (rt.hide_unified_cgroup && HideUnifiedCgroup() != 0) {
    static const char kMsg[] = "corral: could not hide /sys/fs/cgroup/unified from crun\n";
    (void)!::write(2, kMsg, sizeof kMsg - 1);
    ::_exit(126);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execv(argv.pointers[0], argv.pointers.data());
  ::_exit(127);
}

void Report(int fd, int32_t kind, int32_t value) {
  KeeperRecord rec{kind, value};
  (void)!::write(fd, &rec, sizeof rec);
}

// The container init's pid from the runtime's --pid-file; 0 when unreadable.
// Async-signal-safe (the keeper's).
pid_t ReadPidFile(const char* pid_file) {
  char buf[32] = {};
  int fd = ::open(pid_file, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? ::read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) ::close(fd);
  pid_t pid = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) pid = pid * 10 + (buf[i] - '0');
  return pid;
}

}  // namespace

Argv::Argv(std::vector<std::string> args) : storage(std::move(args)) {
  for (auto& a : storage) pointers.push_back(a.data());
  pointers.push_back(nullptr);
}

int RuntimeCommand(const OciRuntime& rt, const std::vector<std::string>& args,
                   std::string* err_text) {
  Argv argv(RuntimeArgv(rt, args));
  Result<Pipe> errors = MakePipe();
  if (!errors) return -1;
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) ExecRuntime(rt, argv, devnull.get(), devnull.get(), errors->write.get());
  errors->write.Reset();
  char buf[4096];
  ssize_t n;
  while ((n = ::read(errors->read.get(), buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (err_text != nullptr && err_text->size() < 65536) err_text->append(buf, n);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

[[noreturn]] void Keeper(const OciRuntime& rt, const Argv& run, const char* pid_file,
                         const KeeperFds& fds) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    Report(fds.report, kKeeperFailed, errno);
    ::_exit(0);
  }
  pid_t runtime = ::fork();
  if (runtime < 0) {
    Report(fds.report, kKeeperFailed, errno);
    ::_exit(0);
  }
  if (runtime == 0) ExecRuntime(rt, run, fds.in, fds.out, fds.err, fds.init_report);
  // The command's stdio and the init's report pipe are the container's now: hold no copy
  // (EOF must mean it is done).
  ::close(fds.out);
  ::close(fds.err);
  ::close(fds.init_report);
  int status = 0;
  while (::waitpid(runtime, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Report(fds.report, kRuntimeFailed, status);
    ::_exit(0);
  }
  const pid_t pid = ReadPidFile(pid_file);
  if (pid <= 0) {
    Report(fds.report, kKeeperFailed, ESRCH);
    ::_exit(0);
  }
  // The init is ours now (re-parented: we are the nearest subreaper); anything else that
  // lands here (a runtime helper) is reaped on the way.
  for (;;) {
    pid_t w = ::waitpid(-1, &status, 0);
    if (w == pid) {
      Report(fds.report, kExited, status);
      ::_exit(0);
    }
    if (w < 0 && errno != EINTR) {
      Report(fds.report, kKeeperFailed, errno);
      ::_exit(0);
    }
  }
}

}  // namespace corral::runtime::oci
