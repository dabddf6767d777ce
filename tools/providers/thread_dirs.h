// Thread directories on the host, in DeerFlow's layout (docs/deerflow-contract.md
// §2.3), and the names of the jail sandboxes that serve them:
//   {base}/users/{user_id}/threads/{thread_id}/
//       user-data/{workspace,uploads,outputs}   -> /mnt/user-data/...
//       acp-workspace/                          -> /mnt/acp-workspace (read-only in jails)
// Ids are validated before they become paths. Parent side.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace corral::runtime {

inline constexpr const char* kDefaultUserId = "default";
inline constexpr const char* kDefaultBaseDir = "/var/lib/corral";

bool IsValidUserId(const std::string& id);    // [A-Za-z0-9_-]+
bool IsValidThreadId(const std::string& id);  // [A-Za-z0-9_-]{1,64}

struct ThreadDirs {
  std::string user_id, thread_id;
  std::string thread_dir, user_data, workspace, uploads, outputs, acp_workspace;
};

// kInvalidArgument naming the bad id.
Result<ThreadDirs> ThreadDirsFor(const std::string& base, const std::string& user_id,
                                 const std::string& thread_id);

// Creates the directories; workspace, uploads, outputs and acp-workspace get mode 0777
// (as DeerFlow's ensure_thread_dirs) so the sandbox's unprivileged uid can write. The
// chmod goes through an O_NOFOLLOW fd: a symlink a sandbox planted in its user-data is
// an error, never a chmod of its target.
Status EnsureThreadDirs(const ThreadDirs& dirs);

// (user_id, thread_id) of every thread directory under `base`, sorted.
std::vector<std::pair<std::string, std::string>> ListThreadDirs(const std::string& base);

// The persistent sandbox name of a thread: "th-" + 32 hex digits of a hash of the base
// directory (canonical where it exists), user and thread, so that two base directories
// never share a sandbox. A hash can collide, so the jail provider also checks that the
// sandbox found under this name mounts this thread's user-data before using it.
std::string JailSandboxName(const std::string& base_dir, const std::string& user_id,
                            const std::string& thread_id);

}  // namespace corral::runtime
