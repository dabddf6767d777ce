#include "cli/front/sys.h"

#include <asm/unistd.h>

#if !defined(__x86_64__)
#error "cli/front: the system-call entry below is x86-64's; add one for this architecture"
#endif

namespace corral::front::sys {

long Syscall(long n, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

long Write(int fd, const void* data, size_t n) {
  return Syscall(__NR_write, fd, reinterpret_cast<long>(data), static_cast<long>(n));
}

void WriteAll(int fd, const char* text) {
  size_t n = StrLen(text);
  while (n > 0) {
    long w = Write(fd, text, n);
    if (w == -4) continue;  // EINTR
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
}

void Exit(int code) {
  for (;;) Syscall(__NR_exit_group, code);
}

const char* ErrnoText(long err) {
  switch (err < 0 ? -err : err) {
    case 1:
      return "Operation not permitted";
    case 2:
      return "No such file or directory";
    case 8:
      return "Exec format error";
    case 12:
      return "Cannot allocate memory";
    case 13:
      return "Permission denied";
    case 20:
      return "Not a directory";
    case 32:
      return "Broken pipe";
    case 36:
      return "File name too long";
    case 104:
      return "Connection reset by peer";
    case 111:
      return "Connection refused";
    default:
      return "system error";
  }
}

const char* GetEnv(char** envp, const char* name) {
  size_t n = StrLen(name);
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    const char* entry = *e;
    size_t i = 0;
    while (i < n && entry[i] == name[i]) ++i;
    if (i == n && entry[n] == '=') return entry + n + 1;
  }
  return nullptr;
}

size_t StrLen(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

bool StrEq(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

bool StartsWith(const char* s, const char* prefix) {
  while (*prefix != '\0') {
    if (*s++ != *prefix++) return false;
  }
  return true;
}

}  // namespace corral::front::sys
