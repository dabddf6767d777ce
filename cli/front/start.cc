// The front program's entry point and the memory functions the compiler may call: what
// libc would otherwise provide (cli/front/sys.h says why there is none).
#include <stddef.h>

#include "cli/front/sys.h"

int FrontMain(int argc, char** argv, char** envp);

extern "C" {

// The kernel starts us with argc, argv[], NULL, envp[], NULL on the stack.
[[noreturn]] __attribute__((used)) void FrontStart(long* stack) {
  int argc = static_cast<int>(stack[0]);
  char** argv = reinterpret_cast<char**>(stack + 1);
  char** envp = argv + argc + 1;
  corral::front::sys::Exit(FrontMain(argc, argv, envp));
}

__asm__(
    ".text\n"
    ".global _start\n"
    "_start:\n"
    "  xor %rbp, %rbp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call FrontStart\n"
    "  hlt\n");

void* memcpy(void* to, const void* from, size_t n) {
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
  for (size_t i = 0; i < n; ++i) d[i] = s[i];
  return to;
}

void* memmove(void* to, const void* from, size_t n) {
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
  if (d < s) {
    for (size_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    for (size_t i = n; i > 0; --i) d[i - 1] = s[i - 1];
  }
  return to;
}

void* memset(void* to, int c, size_t n) {
  auto* d = static_cast<unsigned char*>(to);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<unsigned char>(c);
  return to;
}

int memcmp(const void* a, const void* b, size_t n) {
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

size_t strlen(const char* s) { return corral::front::sys::StrLen(s); }

}  // extern "C"
