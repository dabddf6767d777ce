// The few system calls the front program makes, without libc.
//
// Why no libc: every glibc program starts by probing the CPU (init_cpu_features and the
// cache-size loops of handle_amd/handle_intel, some thirty CPUID instructions). On a
// virtual machine each CPUID traps to the hypervisor; measured on our 2-vCPU development
// VM, a static glibc `int main(){}` takes 0.71-0.76 ms from fork to exit against
// 0.17-0.33 ms for the same program without libc. The front program sits in front of every
// pooled run and exec, so it starts as the latter. Everything here is freestanding C++:
// no allocation but mmap, no exceptions, no static constructors.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace corral::front::sys {

long Syscall(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0);

// Results are the kernel's: >= 0, or -errno.
long Write(int fd, const void* data, size_t n);
void WriteAll(int fd, const char* text);  // best effort, for messages
[[noreturn]] void Exit(int code);
const char* ErrnoText(long err);  // "No such file or directory", or "error N"

// The value of NAME in a NULL-terminated environment, or nullptr.
const char* GetEnv(char** envp, const char* name);

size_t StrLen(const char* s);
bool StrEq(const char* a, const char* b);
bool StartsWith(const char* s, const char* prefix);

}  // namespace corral::front::sys
