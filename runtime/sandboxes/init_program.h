// Finding the corral-init program (jail/init/corral_init.c) that persistent sandboxes run
// as PID 1. Parent side.
#pragma once

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime {

// An O_PATH fd of corral-init, from the first of: $CORRAL_INIT_PROGRAM, the directory of
// the running executable, the install location (<prefix>/libexec/corral), the build tree.
// A candidate that is not a regular executable file, or that someone other than root (or
// us) owns or can write, is refused: it would run as PID 1 of every sandbox.
// kNotFound when none qualifies; the caller then keeps its own process as the init.
Result<UniqueFd> OpenInitProgram();

}  // namespace corral::runtime
