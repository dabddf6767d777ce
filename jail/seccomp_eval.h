// Reading a compiled seccomp filter in the parent: what it answers for a call. Lets an
// exec slot install its filter before its command arrives when every syscall it makes
// after that is allowed outright (jail/enter.cc); the profile tests use it too.
#pragma once

#include <linux/seccomp.h>

#include <cstdint>
#include <initializer_list>
#include <optional>

#include "jail/seccomp.h"

namespace corral::jail {

// Runs `program` on `data` as the kernel would, for the classic-BPF subset seccomp filters
// use (32-bit absolute loads, scratch memory, ALU and jumps with constants, returns): the
// SECCOMP_RET_* value it returns. nullopt for an instruction outside that subset, a load
// past seccomp_data, or a program that runs off its end. *reads_call, if given, says
// whether the path taken loaded anything but the syscall number and the architecture
// (the instruction pointer or an argument).
std::optional<uint32_t> RunSeccompFilter(const SeccompProgram& program, const seccomp_data& data,
                                         bool* reads_call = nullptr);

// True when `program` allows syscall `nr` of the native architecture whatever the call's
// arguments: SECCOMP_RET_ALLOW on a path that loads only the number and the architecture.
// An empty program allows everything. Anything this cannot evaluate is "no": the answer
// errs towards installing the filter later, never towards a call it would refuse.
bool SeccompAllowsOutright(const SeccompProgram& program, std::initializer_list<int> nrs);

// The AUDIT_ARCH_* value of the architecture we are built for.
uint32_t NativeAuditArch();

}  // namespace corral::jail
