// Compiled seccomp programs, cached. Compiling the default profile with libseccomp costs
// several milliseconds — more than the rest of planning a jail — and the result depends
// only on the profile text and the libseccomp version, so it is kept in
// <runtime dir>/seccomp-cache/<key>.bpf (root-only, like the rest of the runtime dir).
// A cache that cannot be read or written is not an error: we compile.
// Parent side.
#pragma once

#include <string>

#include "base/result.h"
#include "jail/seccomp.h"

namespace corral::runtime {

Result<jail::SeccompProgram> CompileSeccompCached(const std::string& json_text,
                                                  const std::string& origin);

}  // namespace corral::runtime
