// The jail child's pipeline, from the instant after clone() to the command's execve.
// Runs only in the child. Syscalls only: no allocation, no locks, no exceptions, no logging.
#pragma once

#include "jail/spawn.h"

namespace corral::jail {

// Never returns. `setup_fd`/`status_fd` are the child's ends of the two channels.
[[noreturn]] void RunJailChild(const SpawnRequest& request, int setup_fd, int status_fd);

// A prepared child (a pooled jail, an exec slot): blocks until its command arrives on
// `status_fd` (jail/command.h), then puts the command's stdio in place. False when the
// parent gave the child up (EOF) or sent garbage.
struct CommandView;
bool AwaitCommand(int status_fd, int setup_fd, CommandView* view);

}  // namespace corral::jail
