// Finding the corral-init program (jail/init/corral_init.c) that persistent sandboxes and
// containers (mode container) run as PID 1. Parent side.
#pragma once

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime {

// An O_PATH fd of corral-init, from the first of: $CORRAL_INIT_PROGRAM, the directory of
// the running executable, the install location (<prefix>/libexec/corral), the build tree.
// A candidate that is not a regular executable file, or that someone other than root (or
// us) owns or can write, is refused: it would run as PID 1 of every sandbox.
// kNotFound when none qualifies; the caller then keeps its own process as the init.
Result<UniqueFd> OpenInitProgram();

// The same search, with the path it found: mode container binds that file into the
// container (runtime/oci/), where the OCI runtime opens it by path.
struct InitProgram {
  std::string path;
  UniqueFd fd;  // O_PATH, of the file that passed the checks
};
Result<InitProgram> FindInitProgram();

}  // namespace corral::runtime
