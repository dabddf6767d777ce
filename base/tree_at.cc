#include "base/tree_at.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace corral {

std::vector<std::string> EntryNames(int dirfd) {
  std::vector<std::string> out;
  const int dup = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0) return out;
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    ::close(dup);
    return out;
  }
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(dir);
  return out;
}

namespace {

Status CopyFileContent(int from, int to, const std::string& what) {
  while (true) {
    const ssize_t n = ::copy_file_range(from, nullptr, to, nullptr, 1 << 30, 0);
    if (n == 0) return Ok();
    if (n > 0) continue;
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP) {
      return Error::FromErrno(errno, "copy " + what);
    }
    break;  // not between these file systems: by hand
  }
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n == 0) return Ok();
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "read " + what);
    }
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        return Error::FromErrno(errno, "write " + what);
      }
      off += w;
    }
  }
}

}  // namespace

Result<UniqueFd> OpenBeneath(int dirfd, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const char* p = path.empty() ? "." : path.c_str();
  const int fd = static_cast<int>(::syscall(SYS_openat2, dirfd, p, &how, sizeof how));
  if (fd < 0) return Error::FromErrno(errno, path.empty() ? "." : path);
  return UniqueFd(fd);
}

TreeUsage UsageAt(int dirfd) {
  TreeUsage usage;
  struct stat st;
  if (::fstat(dirfd, &st) == 0) usage.bytes += static_cast<int64_t>(st.st_blocks) * 512;
  for (const std::string& name : EntryNames(dirfd)) {
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    ++usage.entries;
    if (!S_ISDIR(st.st_mode)) {
      usage.bytes += static_cast<int64_t>(st.st_blocks) * 512;
      continue;
    }
    UniqueFd child(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child) continue;
    const TreeUsage below = UsageAt(child.get());
    usage.bytes += below.bytes;
    usage.entries += below.entries;
  }
  return usage;
}

Status RemoveAt(int dirfd, const std::string& name) {
  struct stat st;
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Ok() : Error::FromErrno(errno, name);
  }
  if (S_ISDIR(st.st_mode)) {
    UniqueFd dir(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return Error::FromErrno(errno, name);
    for (const std::string& child : EntryNames(dir.get())) {
      RETURN_IF_ERROR(RemoveAt(dir.get(), child));
    }
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "rmdir " + name);
    }
    return Ok();
  }
  if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
    return Error::FromErrno(errno, "unlink " + name);
  }
  return Ok();
}

Status CopyAt(int from, const std::string& name, int to, const std::string& to_name) {
  struct stat st;
  if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return Error::FromErrno(errno, name);
  }
  const mode_t mode = st.st_mode & 07777;
  if (S_ISREG(st.st_mode)) {
    UniqueFd src(::openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!src) return Error::FromErrno(errno, name);
    UniqueFd dst(
        ::openat(to, to_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!dst) return Error::FromErrno(errno, to_name);
    RETURN_IF_ERROR(CopyFileContent(src.get(), dst.get(), name));
    (void)::fchown(dst.get(), st.st_uid, st.st_gid);
    if (::fchmod(dst.get(), mode) != 0) return Error::FromErrno(errno, "chmod " + to_name);
    return Ok();
  }
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    const ssize_t n = ::readlinkat(from, name.c_str(), target.data(), target.size());
    if (n < 0) return Error::FromErrno(errno, "readlink " + name);
    target.resize(static_cast<size_t>(n));
    if (::symlinkat(target.c_str(), to, to_name.c_str()) != 0) {
      return Error::FromErrno(errno, "symlink " + to_name);
    }
    (void)::fchownat(to, to_name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
    return Ok();
  }
  if (S_ISDIR(st.st_mode)) {
    if (::mkdirat(to, to_name.c_str(), 0700) != 0) return Error::FromErrno(errno, to_name);
    UniqueFd src(::openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd dst(::openat(to, to_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!src || !dst) return Error::FromErrno(errno, name);
    for (const std::string& child : EntryNames(src.get())) {
      RETURN_IF_ERROR(CopyAt(src.get(), child, dst.get(), child));
    }
    (void)::fchown(dst.get(), st.st_uid, st.st_gid);
    if (::fchmod(dst.get(), mode) != 0) return Error::FromErrno(errno, "chmod " + to_name);
    return Ok();
  }
  return Ok();  // whiteouts, devices, fifos, sockets: not copied
}

}  // namespace corral
