// Directory trees handled through directory fds, never following a symlink: what corral does
// on the host with trees a sandbox wrote (a workspace's changes), where any component of a
// path may be a symlink planted to lead elsewhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral {

// Opens `path` ('/'-separated, relative; "" or "." is `dirfd` itself) beneath `dirfd`:
// no symlink in it, no "..", no magic link (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS). `flags`: O_PATH, O_RDONLY | O_DIRECTORY, ...; O_CLOEXEC is added.
Result<UniqueFd> OpenBeneath(int dirfd, const std::string& path, int flags);

// The names in the directory `dirfd` (not "." and ".."), in the order readdir gives them;
// `dirfd` itself is left where it was.
std::vector<std::string> EntryNames(int dirfd);

// What the tree below the directory `dirfd` takes: disk space (allocated blocks, the
// directory's own included) and its entries (files, directories, links; not `dirfd`
// itself). No symlink is followed.
struct TreeUsage {
  int64_t bytes = 0;
  int64_t entries = 0;
};
TreeUsage UsageAt(int dirfd);

// Removes the entry `name` of `dirfd` whatever it is: a directory with everything below it,
// a symlink itself (never what it points to). One that is not there is no error.
Status RemoveAt(int dirfd, const std::string& name);

// Copies the entry `name` of `from` to `to_name` in `to`, which must not exist: regular files
// (content, mode), directories (recursively), symlinks (as symlinks, the target as written);
// owner and group kept when the caller may set them. Overlayfs whiteouts and other special
// files (devices, fifos, sockets) are left out.
Status CopyAt(int from, const std::string& name, int to, const std::string& to_name);

}  // namespace corral
