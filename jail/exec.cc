// The last stretch of a jail child: hardening in a fixed order, then execve.
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "jail/child_text.h"
#include "jail/command.h"
#include "jail/hardening.h"
#include "jail/setup_record.h"
#include "jail/syscalls.h"

namespace corral::jail {

void ResetSignals() {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::sigaction(sig, &dfl, nullptr);  // fails harmlessly for glibc-reserved signals
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

namespace {

void ReportExecFailure(int report_fd, int err, const char* name) {
  char what[512];
  ChildText(what, sizeof what).Add("execve ").Add(name);
  ReportSetupFailure(report_fd, SetupStep::kExecve, err, what);
}

// execvp without the allocation: tries each PATH entry, remembering EACCES so that
// "found but not executable" (126) is not reported as "not found" (127).
void ExecCommand(const JailPlan& plan, const CommandView* command, int report_fd) {
  char* const* argv = command != nullptr ? command->argv : plan.argv.data();
  char* const* envp = command != nullptr ? command->envp : plan.envp.data();
  const char* name = argv[0];
  if (std::strchr(name, '/') != nullptr) {
    ::execve(name, argv, envp);
    ReportExecFailure(report_fd, errno, name);
    return;
  }
  int result = ENOENT;
  // false: stop looking (the file exists but cannot be run for another reason).
  auto try_dir = [&](const char* dir) {
    char path[4096];
    ChildText text(path, sizeof path);
    text.Add(dir).Add("/").Add(name);
    ::execve(path, argv, envp);
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) return true;
    result = err;
    return err == EACCES;  // ENOEXEC, E2BIG, ...: the file exists, stop looking
  };
  if (command != nullptr) {
    for (const char* const* dir = command->path_dirs; *dir != nullptr; ++dir) {
      if (!try_dir(*dir)) break;
    }
  } else {
    for (const std::string& dir : plan.path_dirs) {
      if (!try_dir(dir.c_str())) break;
    }
  }
  ReportExecFailure(report_fd, result, name);
}

}  // namespace

bool HardenIdentity(const JailPlan& plan, int report_fd) {
  ResetSignals();
  // A new session: the command has no controlling terminal, so it cannot TIOCSTI
  // keystrokes into the caller's shell.
  if (::setsid() < 0 && errno != EPERM) {
    ReportSetupFailure(report_fd, SetupStep::kIds, errno, "setsid");
    return false;
  }
  if (!LockSecurebitsAndDropBounding(report_fd) || !SwitchIds(plan, report_fd) ||
      !ClearCapabilities(report_fd)) {
    return false;
  }
  // The uid change above cleared any parent-death signal.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kLifeline, errno, "PR_SET_PDEATHSIG");
    return false;
  }
  if (!ApplyRlimits(plan, report_fd)) return false;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kNoNewPrivs, errno, "PR_SET_NO_NEW_PRIVS");
    return false;
  }
  return !plan.allocate_tty || TakeTerminal(report_fd);
}

namespace {

// mkdir -p of `path`, as the sandbox user: a missing working directory is created where
// that user may write (as docker run -w does), and nowhere else — under a read-only tree
// or a root-owned directory the mkdir fails. Returns 0 or the failing mkdir's errno.
int MakeDirs(const char* path) {
  char buf[4096];
  size_t n = std::strlen(path);
  if (n == 0 || path[0] != '/' || n >= sizeof buf) return ENAMETOOLONG;
  std::memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    if (::mkdir(buf, 0755) != 0 && errno != EEXIST) return errno;
    buf[i] = saved;
  }
  return 0;
}

bool EnterWorkdir(const char* workdir, int report_fd) {
  if (::chdir(workdir) == 0) return true;
  int err = errno;
  int made = err == ENOENT ? MakeDirs(workdir) : err;
  if (made == 0 && ::chdir(workdir) == 0) return true;
  if (made == 0) err = errno;
  char what[512];
  ChildText text(what, sizeof what);
  text.Add("chdir ").Add(workdir);
  if (err == ENOENT && made != 0) {
    text.Add(" (it does not exist, and the sandbox user (uid ")
        .Add(static_cast<long>(::getuid()))
        .Add(") cannot create it: ")
        .Add(strerrorname_np(made))  // constant text: no locale
        .Add("; use a directory under /tmp, /home/sandbox or a writable mount)");
  }
  ReportSetupFailure(report_fd, SetupStep::kChdir, err, what);
  return false;
}

}  // namespace

void ExecHardened(const JailPlan& plan, int report_fd, const CommandView* command,
                  bool fences_installed) {
  const char* workdir = command != nullptr ? command->workdir : plan.workdir.c_str();
  if (!EnterWorkdir(workdir, report_fd)) return;
  // CLOEXEC rather than close: report_fd must stay usable until execve succeeds.
  const unsigned first_closed = 3 + static_cast<unsigned>(plan.preserve_fds);
  if (sys::CloseRange(first_closed, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kCloseFds, errno, "close_range");
    return;
  }
  // Landlock before seccomp: the filter need not allow the landlock_* syscalls.
  if (!fences_installed && !ApplyLandlock(plan.landlock, -1, report_fd)) return;
  int err = fences_installed ? 0 : InstallSeccomp(plan.seccomp);
  if (err != 0) {
    ReportSetupFailure(report_fd, SetupStep::kSeccomp, err, "install seccomp filter");
    return;
  }
  ExecCommand(plan, command, report_fd);
}

void HardenAndExec(const JailPlan& plan, int report_fd, const CommandView* command) {
  if (HardenIdentity(plan, report_fd)) ExecHardened(plan, report_fd, command, false);
}

}  // namespace corral::jail
