// Whether this kernel runs 32-bit system calls (`int $0x80`) from a 64-bit process.
// Kernels built without IA32 emulation, or booted with ia32_emulation=0, answer such a
// call with SIGSEGV before any seccomp filter sees it, so a test that expects the filter's
// SIGSYS must first ask. Header-only: the unit and integration binaries both use it.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace corral::test {

#if defined(__x86_64__)
// getpid through the i386 entry point. Dies of SIGSEGV without IA32 emulation, with the
// default action so that ASan's handler does not turn the death into an exit.
inline long Int80Getpid() {
  ::signal(SIGSEGV, SIG_DFL);
  long ret = 20;  // __NR_getpid on i386
  asm volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

// Tries it in a child, unfiltered. The answer is the same for every process on the host.
inline bool KernelHasIa32Emulation() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(Int80Getpid() == ::getpid() ? 0 : 1);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
#else
inline bool KernelHasIa32Emulation() { return false; }
#endif

}  // namespace corral::test
