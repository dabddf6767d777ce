// Host-side file access into a directory tree that an untrusted party controls (a
// sandbox's root, or a thread directory the host bash may have filled with symlinks).
//
// Every path is resolved with openat2() from a dirfd of the view's root, with
// RESOLVE_NO_MAGICLINKS and either RESOLVE_IN_ROOT (a whole root file system: absolute
// symlinks and ".." stay inside it, so "/etc/passwd" planted as a symlink is the
// sandbox's own) or RESOLVE_BENEATH (one mounted directory: leaving it is kPathEscape).
// Directory walks open each subdirectory with O_NOFOLLOW from its parent's fd, so a
// rename race (TOCTOU) cannot redirect a walk outside the tree; symlinks are resolved
// from the root again and never descended into. FIFOs and devices are never opened for
// reading content (no hangs, no endless /dev/zero).
//
// With `drop_to` set, each operation opens the root as root, then runs on a short-lived
// thread of its own that drops to the sandbox's uid/gid (setgroups(0), setresgid,
// setresuid as raw syscalls: kernel credentials are per thread), so permission checks are
// the sandbox user's and created files belong to it; read-only mounts stay read-only
// because the walk goes through the sandbox's own mounts. The thread never switches back;
// it ends with the operation. (It was a forked child: in a multithreaded daemon a child may
// inherit a lock another thread held at fork, and AddressSanitizer's allocator does not
// reset its locks, so children hung for good. The kernel marks the process non-dumpable
// once any thread changes its ids, as for any set*id; corral does not need to be dumpable.)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/providers/sandbox.h"

namespace corral::runtime {

struct FileView {
  std::string root;      // host path of the tree's root: "/proc/<pid>/root" or a directory
  bool in_root = false;  // RESOLVE_IN_ROOT (true) or RESOLVE_BENEATH (false)
  std::optional<std::pair<uid_t, gid_t>> drop_to;  // run as these ids
  // With drop_to and a /proc/<pid>/root root: the pid's start time, checked after the
  // open so a recycled pid is never mistaken for the sandbox's init.
  std::optional<std::pair<pid_t, uint64_t>> expect_process;
};

struct TreeEntry {
  std::string rel;  // relative to the view's root, no leading '/'
  bool is_dir = false;
  // Filled only with WalkOptions::with_stat (for a symlink: its target's).
  bool is_symlink = false;
  int64_t size = 0;
  int64_t mtime = 0;  // seconds since the epoch
  uint32_t mode = 0;  // st_mode
};

struct WalkOptions {
  int max_depth = 2;            // 1 = children of the start only
  bool skip_ignored = true;     // DeerFlow's IGNORE_PATTERNS, per segment
  size_t max_entries = 200000;  // safety bound on huge trees
  bool with_stat = false;       // fill TreeEntry's size, mtime, mode (the AIO file list)
};

// `rel` below is a path relative to the view's root ("" or "." is the root itself).

SbResult<std::string> ReadBytes(const FileView& view, const std::string& rel, int64_t max_bytes);
// Creates missing parent directories (0755), then appends, or replaces the whole content
// in one step (tools/providers/file_replace.h: never a mix of old and new under the name).
SbStatus WriteBytes(const FileView& view, const std::string& rel, const std::string& data,
                    bool append);
// Entries below the directory `rel` (not `rel` itself), sorted by path.
SbResult<std::vector<TreeEntry>> WalkTree(const FileView& view, const std::string& rel,
                                          const WalkOptions& options);
// Whether `rel` is a directory (following symlinks inside the view).
SbResult<bool> IsDirectory(const FileView& view, const std::string& rel);

struct GrepRequest {
  std::string pattern;
  GrepOptions options;  // glob relative to `rel`
};
struct GrepHit {
  std::string rel;
  int line_number = 0;
  std::string line;
};
struct GrepHits {
  std::vector<GrepHit> hits;
  std::optional<std::string> stopped_by;  // the work bound that ended the search early
};
// Greps the file `rel`, or every file below the directory `rel` (ignore patterns,
// binary files and files over options.max_file_bytes skipped). Stops after max_results + 1 hits,
// or when options.max_bytes_scanned or options.max_seconds is spent (stopped_by).
SbResult<GrepHits> GrepTree(const FileView& view, const std::string& rel,
                            const GrepRequest& request);

}  // namespace corral::runtime
