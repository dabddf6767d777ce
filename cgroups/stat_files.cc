#include "cgroups/stat_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace corral::cgroups {

namespace {

Result<std::string> ReadFromStart(int fd, const std::string& path) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "read " + path);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

void StatFiles::Close() {
  open_.clear();
  keep_open_ = false;
}

Result<std::optional<std::string>> StatFiles::Read(const std::string& path) {
  if (auto it = open_.find(path); it != open_.end()) {
    ASSIGN_OR_RETURN(std::string text, ReadFromStart(it->second.get(), path));
    return std::optional<std::string>(std::move(text));
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::optional<std::string>();
    return Error::FromErrno(errno, "open " + path);
  }
  ASSIGN_OR_RETURN(std::string text, ReadFromStart(fd.get(), path));
  if (keep_open_) open_.emplace(path, std::move(fd));
  return std::optional<std::string>(std::move(text));
}

}  // namespace corral::cgroups
