// The jail's /etc as one shared, read-only snapshot directory instead of ~30 files written
// into every jail's tmpfs root. Parent side.
//
// Writing the copied host files (ld.so.cache, services, mime.types, ...) and the generated
// passwd/group/hosts/hostname cost every jail ~0.3 MiB of tmpfs pages and ~30 file writes
// in the child. Jails with the same content now share <runtime>/etc/<key>/, bound
// read-only at /etc. The key hashes the generated files' text, the symlinks, and each
// copied host file's path, inode, size, mtime and ctime, so an edited host file (or a
// different hostname or uid) gives a new snapshot: a jail never sees an edit made after
// its snapshot was taken, as before. Snapshots are built in a temporary directory and
// renamed into place, so concurrent corrals agree on one. Old snapshots are not pruned
// (a running jail may still have one bound); each is a few hundred KiB under /run.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace corral::runtime {

struct EtcEntry {
  enum class Kind { kDir, kFile, kSymlink, kHostFile };
  Kind kind = Kind::kFile;
  std::string path;         // relative to /etc, e.g. "ssl/openssl.cnf"
  std::string data;         // kFile: content; kSymlink: target; kHostFile: host path
  std::string fingerprint;  // kHostFile: inode, size, mtime, ctime of the host file
};

// Directory holding a snapshot of `entries` (created if missing), 0755 root-owned.
Result<std::string> EnsureEtcSnapshot(const std::vector<EtcEntry>& entries);

}  // namespace corral::runtime
