// Sandboxes of this user that the current runtime directory does not list: made under
// another XDG_RUNTIME_DIR or CORRAL_RUNTIME_DIR (another shell's), still running, and
// invisible to `ps` and `rm` here. `corral ps` names them rather than show an empty list.
// Parent side; reads /proc.
#pragma once

#include <sys/types.h>

#include <vector>

#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {

// For a non-root caller, the pids of running sandbox inits of its own that none of `listed`
// records: a process in a user namespace that maps the caller's uid, whose command line is
// exactly "corral-init", that is PID 1 of its own PID namespace, and whose parent is no
// corral or corral-cli process (a one-shot run's init has its corral as parent; a sandbox's init
// outlives the create that made it). Empty for root, whose sandboxes share /run/corral.
std::vector<pid_t> UnlistedSandboxInits(const std::vector<SandboxInfo>& listed);

}  // namespace corral::runtime
