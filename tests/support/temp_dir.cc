#include "tests/support/temp_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "base/unique_fd.h"

namespace corral::test {
namespace {

// Empties the directory open as `dir_fd` (on device `dev`), then the caller removes it.
// Recursion depth is bounded by the tree the test made; fds are closed on the way back up.
Status EmptyDir(int dir_fd, dev_t dev, const std::string& path) {
  int dup_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return Error::FromErrno(errno, "dup " + path);
  DIR* dir = fdopendir(dup_fd);
  if (dir == nullptr) {
    close(dup_fd);
    return Error::FromErrno(errno, "fdopendir " + path);
  }
  Status status;
  while (struct dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string child = path + "/" + name;
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
      status = Error::FromErrno(errno, "stat " + child);
      break;
    }
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev) {
        status = Error(ErrorCode::kIo, "refusing to remove mount point " + child);
        break;
      }
      UniqueFd sub(openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) {
        status = Error::FromErrno(errno, "open " + child);
        break;
      }
      status = EmptyDir(sub.get(), dev, child);
      if (!status) break;
    }
    if (unlinkat(dir_fd, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0) {
      status = Error::FromErrno(errno, "remove " + child);
      break;
    }
  }
  closedir(dir);
  return status;
}

}  // namespace

Status RemoveTree(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return Ok();
    if (errno == ENOTDIR || errno == ELOOP) {
      if (unlink(path.c_str()) < 0) return Error::FromErrno(errno, "remove " + path);
      return Ok();
    }
    return Error::FromErrno(errno, "open " + path);
  }
  struct stat st;
  if (fstat(fd.get(), &st) < 0) return Error::FromErrno(errno, "stat " + path);
  RETURN_IF_ERROR(EmptyDir(fd.get(), st.st_dev, path));
  if (rmdir(path.c_str()) < 0) return Error::FromErrno(errno, "remove " + path);
  return Ok();
}

TempDir::TempDir() {
  std::string tmpl = "/tmp/corral-test-" + std::to_string(getpid()) + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror(("mkdtemp " + tmpl).c_str());
    std::abort();
  }
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  Status s = RemoveTree(path_);
  if (!s) std::fprintf(stderr, "TempDir: %s\n", s.error().message().c_str());
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) (void)RemoveTree(path_);
    path_ = std::exchange(other.path_, "");
  }
  return *this;
}

std::string TempDir::Join(const std::string& relative) const { return path_ + "/" + relative; }

Status TempDir::MakeDirs(const std::string& relative, unsigned mode) const {
  std::string current = path_;
  size_t start = 0;
  while (start < relative.size()) {
    size_t end = relative.find('/', start);
    if (end == std::string::npos) end = relative.size();
    if (end > start) {
      current += "/" + relative.substr(start, end - start);
      bool last = end == relative.size();
      if (mkdir(current.c_str(), last ? mode : 0755) < 0 && errno != EEXIST) {
        return Error::FromErrno(errno, "mkdir " + current);
      }
      // mkdir applies the umask; the caller asked for `mode` exactly.
      if (last && chmod(current.c_str(), mode) < 0) {
        return Error::FromErrno(errno, "chmod " + current);
      }
    }
    start = end + 1;
  }
  return Ok();
}

Status TempDir::WriteFile(const std::string& relative, const std::string& content,
                          unsigned mode) const {
  std::string path = Join(relative);
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return Error::FromErrno(errno, "create " + path);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "write " + path);
    off += static_cast<size_t>(n);
  }
  if (fchmod(fd.get(), mode) < 0) return Error::FromErrno(errno, "chmod " + path);
  return Ok();
}

}  // namespace corral::test
