// corral-init: PID 1 of a persistent sandbox, once the jail is built.
//
// The jail child hardens itself (no capabilities, no_new_privs, seccomp) and then execs
// this program so that each idle sandbox costs one small static process instead of a
// copy-on-write image of the whole corral binary (~0.7 MiB of private pages each).
// It only reaps: exec'd commands are reparented to it when their corral exec goes away.
// Every signal stays blocked (PID 1 would otherwise ignore default-action signals
// anyway); SIGKILL from the host, or the removal of the sandbox's cgroup, ends it and
// with it the PID namespace.
//
// Plain C, static, no allocation: it runs inside the sandbox with whatever libraries the
// sandbox's root has (possibly none).
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>

int main(void) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);
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
