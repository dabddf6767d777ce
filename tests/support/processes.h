// The processes whose parent is a given one, as /proc/<pid>/status shows them: for tests
// that check what a pool or server keeps running (spawners, jails, exec slots).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace corral::test {

struct ChildStatus {
  pid_t pid;
  std::string status;  // the text of /proc/<pid>/status
};

// Every process whose PPid is `parent` (children of any of its threads).
std::vector<ChildStatus> ChildrenOf(pid_t parent);

// The value of a "Key:\t..." line of a /proc/<pid>/status text, or "" if there is none.
std::string StatusField(const std::string& status, const std::string& key);

}  // namespace corral::test
