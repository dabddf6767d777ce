#include "tools/providers/file_replace.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "base/unique_fd.h"

namespace corral::runtime {
namespace {

constexpr char kPartialInfix[] = ".corral-partial-";
constexpr int kSuffixLength = 6;

std::string PartialName(const std::string& name) {
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::string out = "." + name + kPartialInfix;
  for (int i = 0; i < kSuffixLength; ++i) out += kDigits[random() % (sizeof kDigits - 1)];
  return out;
}

}  // namespace

int WriteAllBytes(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    off += static_cast<size_t>(n);
  }
  return 0;
}

SbResult<bool> ReplaceFileContent(int dir_fd, const std::string& name, const std::string& data,
                                  const std::string& rel) {
  const size_t longest = NAME_MAX - (sizeof kPartialInfix - 1) - kSuffixLength - 1;
  if (name.empty() || name == "." || name == ".." || name.size() > longest) return false;
  struct stat old {};
  const bool exists = ::fstatat(dir_fd, name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT) return ErrorFromErrno(errno, rel);
  if (exists && (!S_ISREG(old.st_mode) || old.st_nlink != 1 || old.st_uid != ::geteuid())) {
    return false;
  }
  std::string partial;
  UniqueFd fd;
  for (int attempt = 0; attempt < 16 && !fd; ++attempt) {
    partial = PartialName(name);
    fd.Reset(::openat(dir_fd, partial.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                      exists ? old.st_mode & 0777 : 0644));
    if (fd || errno == EEXIST) continue;
    if (errno == EACCES || errno == EPERM) return false;  // may write the file, not the dir
    return ErrorFromErrno(errno, rel);
  }
  if (!fd) return SandboxError{SandboxErrc::kIo, rel + ": no free temporary name beside it"};
  auto discard = [&](int err) -> SbResult<bool> {
    ::unlinkat(dir_fd, partial.c_str(), 0);
    return ErrorFromErrno(err, rel);
  };
  if (exists && ::fchmod(fd.get(), old.st_mode & 07777) != 0) return discard(errno);
  if (int err = WriteAllBytes(fd.get(), data); err != 0) return discard(err);
  if (::renameat(dir_fd, partial.c_str(), dir_fd, name.c_str()) != 0) {
    if (errno == EBUSY || errno == EXDEV) {  // a mount point: only an in-place write works
      ::unlinkat(dir_fd, partial.c_str(), 0);
      return false;
    }
    return discard(errno);
  }
  return true;
}

}  // namespace corral::runtime
