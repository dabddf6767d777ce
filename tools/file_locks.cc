#include "tools/file_locks.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace corral::tools {

namespace {

std::shared_ptr<std::mutex> ProcessMutex(const std::string& key) {
  static std::mutex registry_mu;
  static std::map<std::string, std::weak_ptr<std::mutex>> registry;
  std::lock_guard<std::mutex> lock(registry_mu);
  if (auto existing = registry[key].lock()) return existing;
  auto fresh = std::make_shared<std::mutex>();
  registry[key] = fresh;
  for (auto it = registry.begin(); it != registry.end();) {
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  }
  return fresh;
}

// FNV-1a over the key: stable across processes, which is all a lock file name needs.
std::string LockFileName(const std::string& key) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.lock", static_cast<unsigned long long>(h));
  return name;
}

// <runtime dir>/tool-locks/<hash>.lock, its directories made if missing; "" if they
// cannot be.
std::string LockFilePath(const std::string& key) {
  const char* env = std::getenv("CORRAL_RUNTIME_DIR");
  std::string root = env != nullptr && *env == '/' ? env : "/run/corral";
  std::string dir = root + "/tool-locks";
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) return "";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
  return dir + "/" + LockFileName(key);
}

// True while `fd` is the file at `path`: not unlinked by the lock's previous holder.
bool StillAtPath(int fd, const std::string& path) {
  struct stat held, named;
  return ::fstat(fd, &held) == 0 && held.st_nlink > 0 && ::stat(path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

// Opens and flocks the lock file at `path`, again if the one it locked was released
// (unlinked) while it waited.
UniqueFd LockPath(const std::string& path) {
  for (;;) {
    UniqueFd file(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!file) return file;
    while (::flock(file.get(), LOCK_EX) != 0 && errno == EINTR) {
    }
    if (StillAtPath(file.get(), path)) return file;
  }
}

}  // namespace

FileLockGuard::FileLockGuard(std::shared_ptr<std::mutex> mutex, UniqueFd lock_file,
                             std::string lock_path)
    : mutex_(std::move(mutex)),
      lock_file_(std::move(lock_file)),
      lock_path_(std::move(lock_path)) {}

FileLockGuard::~FileLockGuard() {
  if (lock_file_) {
    // Still holding the flock: whoever waits on this file sees it unlinked and reopens.
    (void)::unlink(lock_path_.c_str());
    lock_file_.Reset();  // releases the flock
  }
  mutex_->unlock();
}

std::unique_ptr<FileLockGuard> LockFile(const std::string& sandbox_id, const std::string& path) {
  // '\0' cannot occur in an id or a path, so the key is unambiguous.
  std::string key = sandbox_id + '\0' + path;
  std::shared_ptr<std::mutex> mutex = ProcessMutex(key);
  mutex->lock();
  std::string lock_path = LockFilePath(key);
  UniqueFd file = lock_path.empty() ? UniqueFd() : LockPath(lock_path);
  return std::make_unique<FileLockGuard>(std::move(mutex), std::move(file), std::move(lock_path));
}

}  // namespace corral::tools
