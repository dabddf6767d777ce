// The cgroup files ReadStats() reads, optionally kept open between reads: opening a
// cgroupfs file (path walk, kernfs open) costs ten times what re-reading an open one does,
// and a pooled jail's figures are read on the path of its answer. The drivers' ReadStats
// goes through one of these; KeepOpen() makes every file read from then on stay open.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::cgroups {

class StatFiles {
 public:
  void KeepOpen() { keep_open_ = true; }
  // Closes what is open (before the cgroup's rmdir) and stops keeping files open.
  void Close();
  // The whole file, read from offset 0 (the kernel generates it anew); nullopt when it
  // does not exist.
  Result<std::optional<std::string>> Read(const std::string& path);

 private:
  bool keep_open_ = false;
  std::map<std::string, UniqueFd> open_;
};

}  // namespace corral::cgroups
