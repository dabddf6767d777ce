#include "tests/support/processes.h"

#include <dirent.h>

#include <cstdlib>

#include "base/files.h"

namespace corral::test {

std::vector<ChildStatus> ChildrenOf(pid_t parent) {
  std::vector<ChildStatus> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  const std::string want = std::to_string(parent);
  while (dirent* e = ::readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    auto status = ReadFile("/proc/" + std::to_string(pid) + "/status");
    if (status && StatusField(*status, "PPid") == want) out.push_back({pid, std::move(*status)});
  }
  ::closedir(proc);
  return out;
}

std::string StatusField(const std::string& status, const std::string& key) {
  const std::string text = "\n" + status;
  size_t at = text.find("\n" + key + ":\t");
  if (at == std::string::npos) return "";
  at += key.size() + 3;
  return text.substr(at, text.find('\n', at) - at);
}

}  // namespace corral::test
