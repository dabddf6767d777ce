// The jail child's pipeline, from the instant after clone() to the command's execve.
// Runs only in the child. Syscalls only: no allocation, no locks, no exceptions, no logging.
#pragma once

#include "jail/spawn.h"

namespace corral::jail {

// Never returns. `setup_fd`/`status_fd` are the child's ends of the two channels.
[[noreturn]] void RunJailChild(const SpawnRequest& request, int setup_fd, int status_fd);

}  // namespace corral::jail
