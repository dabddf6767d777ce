// `corral cp`: copying files and directories between the host and a persistent sandbox,
// as tar streams, the way `docker cp` does. Parent side (corral-cli).
//
// The sandbox side is the jail's own /usr/bin/tar, started through ExecInSandbox: it runs
// as the sandbox user inside the jail, so the kernel decides what it may read there and
// where it may write; nothing on that side needs checks of ours. The host side reads or
// writes with the host's GNU tar, and what comes out of a sandbox is treated as hostile
// (the sandbox's processes can tamper with the tar that writes it):
//   - it is extracted by a tar with no capabilities (no device nodes, no chown) into a new
//     private directory (0700, root's) made beside the destination, where the sandbox
//     cannot reach; GNU tar strips leading '/', skips members with '..' and defers
//     symlinks that point out (absolute, '..') to the end, so nothing is written outside;
//   - the result must be exactly the entry asked for (a stray top-level name is refused),
//     device nodes are refused, set-uid/set-gid bits are cleared;
//   - then it is moved into the destination entry by entry with renameat on directory
//     fds opened O_NOFOLLOW, so a symlink the sandbox planted in a destination it can
//     write (a shared `-v DIR:...:rw` mount) is replaced, never followed.
// Not covered: the host source of a copy in is read as the caller (root) and followed as
// given, so a path through a directory the sandbox can write is the caller's risk.
// Ownership follows docker cp: what is copied in belongs to the sandbox user, what is
// copied out to the user who ran corral (root). Modes are kept (less set-uid/set-gid on
// the host; less the umask in the sandbox).
#pragma once

#include <string>

#include "base/result.h"

namespace corral::runtime {

// "/a/b" -> dir "/a", base "b"; "/a/b/." or "/a/b/" + contents -> copy what is in b.
struct CopyPath {
  std::string dir;              // where tar runs (-C); "." for a relative host path without '/'
  std::string base;             // the entry named in the archive; "." when `contents`
  bool contents = false;        // "DIR/." : the directory's contents, not the directory
  bool trailing_slash = false;  // "DIR/" : must be a directory
};
// Errors for an empty path and one ending in "..". `what` names the path in messages.
Result<CopyPath> SplitCopyPath(const std::string& path, const std::string& what);

struct CopyRequest {
  std::string sandbox;       // name or id
  std::string sandbox_path;  // absolute, inside the sandbox
  std::string host_path;     // "-": a tar stream on stream_fd instead
  int stream_fd = -1;        // with "-": stdin (copy in) or stdout (copy out)
};

// NAME:SRC -> DST (or a tar stream of SRC to stream_fd). Errors name the path: no such
// file in the sandbox, destination directory missing, sandbox not found.
Status CopyFromSandbox(const CopyRequest& request);
// SRC (or a tar stream on stream_fd, extracted into the directory sandbox_path) ->
// NAME:DST.
Status CopyToSandbox(const CopyRequest& request);

// The host half of CopyFromSandbox, for tests: extracts the untrusted tar stream on
// `archive_fd`, which should hold the entry `source.base` (or, with source.contents, the
// contents of a directory), to `host_dst` by the rules of `docker cp` (into it if it is
// a directory, else as it). Reads `archive_fd` to its end or to the first error.
Status ExtractUntrustedArchive(int archive_fd, const CopyPath& source, const std::string& host_dst);

}  // namespace corral::runtime
