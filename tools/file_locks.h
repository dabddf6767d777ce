// Locks per (sandbox id, path), held by write_file and str_replace so two concurrent edits
// of one file cannot lose an update (DeerFlow's file_operation_lock). A lock is both a
// process-wide mutex (threads of one process, e.g. a daemon) and an flock on a lock file
// under <runtime dir>/tool-locks/ (separate `corral tool` processes), so it holds across
// every caller on the host. Lock files are named by a hash of (sandbox, path) and exist
// only while a lock is held: the holder unlinks its file before it lets go, and a locker
// that finds, once it holds the flock, that its file was unlinked meanwhile (or replaced
// by a newer one) starts over with the file now at that name. So tool-locks/ holds the
// locks held right now, not one file for every path ever edited.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/unique_fd.h"

namespace corral::tools {

class FileLockGuard {
 public:
  FileLockGuard(std::shared_ptr<std::mutex> mutex, UniqueFd lock_file, std::string lock_path);
  ~FileLockGuard();
  FileLockGuard(const FileLockGuard&) = delete;
  FileLockGuard& operator=(const FileLockGuard&) = delete;

 private:
  std::shared_ptr<std::mutex> mutex_;
  UniqueFd lock_file_;     // flock'ed; closing releases it
  std::string lock_path_;  // unlinked (under the flock) on release
};

// Blocks until this caller holds the lock of (sandbox_id, path). If the lock file cannot
// be created (no runtime dir), only the in-process mutex is held.
std::unique_ptr<FileLockGuard> LockFile(const std::string& sandbox_id, const std::string& path);

}  // namespace corral::tools
