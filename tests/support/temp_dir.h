// TempDir: a private directory under /tmp that exists for the lifetime of the object and is
// removed recursively (without following symlinks) on destruction. Move-only.
//
// Names are /tmp/corral-test-<pid>-XXXXXX, so the leak checker can tell this process's
// directories from those of other test processes running at the same time.
#pragma once

#include <string>

#include "base/result.h"

namespace corral::test {

class TempDir {
 public:
  // Creates the directory (mode 0700, owned by the caller). Aborts the test binary if
  // mkdtemp fails: without a temp dir there is nothing a test can do.
  TempDir();
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + relative.
  std::string Join(const std::string& relative) const;

  // Creates `relative` (and its parents) below the directory. Mode applies to the last one.
  Status MakeDirs(const std::string& relative, unsigned mode = 0755) const;
  // Writes a regular file below the directory (created or truncated), with `mode`.
  Status WriteFile(const std::string& relative, const std::string& content,
                   unsigned mode = 0644) const;

 private:
  std::string path_;
};

// Removes `path` recursively without following symlinks and without crossing into other
// mounts (a mount point found below it is an error, not something to delete through).
// Missing `path` is not an error.
Status RemoveTree(const std::string& path);

}  // namespace corral::test
