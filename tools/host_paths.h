// Keeping host paths out of what an agent reads. Error texts come from every layer (the
// store, the planner, file access through /proc/<pid>/root, thread directories) and may
// name host paths; before an answer leaves the tool layer, each known host path becomes
// what the agent knows it as (its virtual path) or a placeholder. Pure string work.
#pragma once

#include <string>

#include "runtime/spec/provider_config.h"
#include "tools/providers/thread_dirs.h"

namespace corral::tools {

// Replaces, longest first: the thread's user-data and acp-workspace by /mnt/user-data and
// /mnt/acp-workspace, the skills directory and configured mounts by their container
// paths, the base directory by "<base_dir>" and corral's runtime directory by
// "<runtime_dir>". `dirs` may be null (the thread ids were invalid). A sandbox's root as
// the host sees it (/proc/<pid>/root) is kept out where messages are made instead: an
// agent may name /proc paths of its own, which must be echoed as given.
std::string MaskHostPaths(std::string text, const runtime::ProviderConfig& config,
                          const runtime::ThreadDirs* dirs);

}  // namespace corral::tools
