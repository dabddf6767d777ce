// Finding corral's own companion files (corral-init, corral-netproxy, the Python package)
// and refusing ones another user could have planted or changed.
#pragma once

#include <sys/stat.h>

#include <string>

#include "base/result.h"

namespace corral {

// The directory of the running executable (/proc/self/exe), "" if it cannot be read.
std::string OwnExecutableDir();

// OK if `st` (of `path`) is owned by root or by us and neither group nor others may write
// it; else a kPermissionDenied error naming the path.
Status CheckOwnedByRootOrUs(const std::string& path, const struct stat& st);

}  // namespace corral
