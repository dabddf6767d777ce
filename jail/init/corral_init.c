// corral-init: PID 1 of a persistent sandbox, and of a container in mode container.
//
// Persistent sandbox (no arguments). The jail child hardens itself (no capabilities,
// no_new_privs, seccomp) and then execs this program so that each idle sandbox costs one
// small static process instead of a copy-on-write image of the whole corral binary
// (~0.7 MiB of private pages each). It only reaps: exec'd commands are reparented to it
// when their corral exec goes away. Every signal stays blocked (PID 1 would otherwise
// ignore default-action signals anyway); SIGKILL from the host, or the removal of the
// sandbox's cgroup, ends it and with it the PID namespace.
//
// Container (`corral-init -r FD -- CMD ARGS...`, runtime/oci/). The OCI runtime starts
// this as the container's PID 1, so that the command is not PID 1 and dies of the signals
// process mode's timeout sends (the kernel shields a namespace's init from every signal it
// has no handler for, so a command that is PID 1 ignores SIGTERM). It does what process
// mode's init and supervisor do: blocks every signal, runs the command with an empty mask,
// passes a signal the runtime sends it (corral's timeout: `kill ID TERM`) on to every
// process in the container, reaps, and when the command ends reports its raw wait status
// on FD and exits (the kernel then kills whatever is left in the namespace). A command that cannot
// be executed is reported as an exec errno instead, as process mode reports a failed execve.
//
// Plain C, static, no allocation: it runs inside the sandbox with whatever libraries the
// sandbox's root has (possibly none).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// One report on the container's report fd; runtime/oci/container_run.cc reads it.
enum { kReportWaitStatus = 0, kReportExecErrno = 1 };
struct Report {
  int32_t kind;
  int32_t value;
};

static void SendReport(int fd, int32_t kind, int32_t value) {
  struct Report report = {kind, value};
  ssize_t n;
  do {
    n = write(fd, &report, sizeof report);
  } while (n < 0 && errno == EINTR);
}

static void WaitForever(void) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    int status = 0;
    pid_t pid = wait4(-1, &status, 0, NULL);
    if (pid < 0 && errno == ECHILD) {
      // Childless: sleep until an orphan is reparented to us and exits.
      siginfo_t info;
      sigwaitinfo(&chld, &info);
    }
  }
}

static int ParseFd(const char* text) {
  int fd = 0;
  if (*text == '\0') return -1;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9' || fd > 65535) return -1;
    fd = fd * 10 + (*text - '0');
  }
  return fd;
}

// Forwards a signal the runtime sent us (`crun|runc kill ID SIG`, corral's timeout) as
// process mode's supervisor sends it: to every process of the sandbox. As PID 1 of the
// container's namespace kill(-1) reaches exactly those; without a PID namespace of its own
// it would reach every process of the sandbox's uid on the host, so only the command then.
static void Forward(int sig, pid_t command) {
  if (getpid() == 1) {
    kill(-1, sig);
  } else {
    kill(command, sig);
  }
}

static int RunContainerCommand(int report_fd, char** argv) {
  // The command must not inherit the report fd: its EOF tells corral we are gone.
  if (fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0) return 126;
  pid_t command = fork();
  if (command < 0) {
    SendReport(report_fd, kReportExecErrno, errno);
    return 126;
  }
  if (command == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(argv[0], argv);
    SendReport(report_fd, kReportExecErrno, errno);
    _exit(errno == ENOENT ? 127 : 126);
  }
  // Every signal is blocked: those the runtime sends stay pending (a signal from outside
  // the namespace is queued for its init even without a handler) until taken here.
  sigset_t all;
  sigfillset(&all);
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&all, &info);
    if (sig < 0) continue;  // EINTR
    if (sig != SIGCHLD) {
      Forward(sig, command);
      continue;
    }
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid == command) {
        SendReport(report_fd, kReportWaitStatus, status);
        return 0;
      }
      if (pid <= 0) break;  // none left to reap now (0), or no children (-1)
    }
  }
}

int main(int argc, char** argv) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);
  if (argc == 1) WaitForever();
  int report_fd = argc >= 5 && strcmp(argv[1], "-r") == 0 ? ParseFd(argv[2]) : -1;
  if (report_fd < 0 || strcmp(argv[3], "--") != 0) {
    static const char kUsage[] = "usage: corral-init [-r FD -- COMMAND [ARG...]]\n";
    (void)!write(2, kUsage, sizeof kUsage - 1);
    return 2;
  }
  return RunContainerCommand(report_fd, argv + 4);
}
