// Seccomp: profiles in the OCI/Docker JSON format, compiled in the parent with libseccomp
// into a classic-BPF program that the jail child installs as its last step before execve.
//
// Parent half: CompileSeccompProfile / BuiltinSeccompProfile (allocate, use libseccomp).
// Child half:  InstallSeccomp (one syscall; no allocation).
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "jail/seccomp_builtins.h"  // the built-in profiles' names and texts

namespace corral::jail {

// A compiled filter for the native architecture. Empty = no filter ("unconfined").
struct SeccompProgram {
  std::vector<sock_filter> instructions;
  bool empty() const { return instructions.empty(); }
};

// Compiles OCI/Docker seccomp JSON (`defaultAction`, `defaultErrnoRet`, `architectures`,
// `syscalls[{names, action, errnoRet, args[{index, value, valueTwo, op}]}]`).
// `origin` names the profile in errors ("seccomp profile /x.json: syscalls[3].action: ...").
// The filter checks the architecture first; calls from any other ABI (32-bit int 0x80,
// x32) are killed. Syscall names this libseccomp/arch does not know are skipped.
Result<SeccompProgram> CompileSeccompProfile(const std::string& json_text,
                                             const std::string& origin);

// The same for a profile written for runc (an OCI config's linux.seccomp): the rules
// libseccomp would silently ignore there (one shadowed by a rule for the same syscall with
// fewer conditions and another action) are left out and listed in *dropped, not refused.
Result<SeccompProgram> CompileRuncSeccompProfile(const std::string& json_text,
                                                 const std::string& origin,
                                                 std::vector<std::string>* dropped);
// (A null `dropped` is CompileSeccompProfile's strict reading.)

// Child side: sets the filter with seccomp(SECCOMP_SET_MODE_FILTER). Requires
// no_new_privs. Returns 0 or an errno value. Async-signal-safe.
int InstallSeccomp(const SeccompProgram& program);

}  // namespace corral::jail
