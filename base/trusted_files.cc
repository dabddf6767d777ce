#include "base/trusted_files.h"

#include <limits.h>
#include <unistd.h>

namespace corral {

std::string OwnExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

Status CheckOwnedByRootOrUs(const std::string& path, const struct stat& st) {
  if ((st.st_uid != 0 && st.st_uid != ::geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Error(ErrorCode::kPermissionDenied,
                 path + ": refused: writable by or owned by another user");
  }
  return {};
}

}  // namespace corral
