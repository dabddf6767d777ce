#include "runtime/sandboxes/unlisted_inits.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "base/files.h"

namespace corral::runtime {
namespace {

// The "Name:", "PPid:" and last "NSpid:" value of /proc/<pid>/status.
struct ProcStatus {
  std::string name;
  pid_t ppid = 0;
  pid_t inner_pid = 0;  // its pid in its own (innermost) PID namespace
};

bool ReadStatus(pid_t pid, ProcStatus* out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  if (!in) return false;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "Name:") {
      fields >> out->name;
    } else if (key == "PPid:") {
      fields >> out->ppid;
    } else if (key == "NSpid:") {
      for (pid_t v; fields >> v;) out->inner_pid = v;
    }
  }
  return true;
}

// Whether the process's user namespace maps `uid` (the caller) from outside: a rootless
// sandbox of the caller's (its init may run as a subordinate id, not as the caller).
bool MapsUid(const std::string& dir, uid_t uid) {
  std::ifstream in(dir + "/uid_map");
  for (uint64_t inside, outside, count; in >> inside >> outside >> count;) {
    if (inside == 0 && outside == 0 && count == 4294967295ULL) return false;  // the host's
    if (uid >= outside && uid - outside < count) return true;
  }
  return false;
}

bool IsSandboxInit(pid_t pid, uid_t uid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  if (!MapsUid(dir, uid)) return false;
  auto cmdline = ReadFile(dir + "/cmdline");
  if (!cmdline || *cmdline != std::string("corral-init\0", 12)) return false;
  ProcStatus status;
  if (!ReadStatus(pid, &status) || status.inner_pid != 1) return false;
  ProcStatus parent;
  if (status.ppid > 0 && ReadStatus(status.ppid, &parent) &&
      (parent.name == "corral" || parent.name == "corral-cli")) {
    return false;  // a run's init, or one a live daemon watches
  }
  return true;
}

}  // namespace

std::vector<pid_t> UnlistedSandboxInits(const std::vector<SandboxInfo>& listed) {
  std::vector<pid_t> out;
  const uid_t uid = ::geteuid();
  if (uid == 0) return out;  // root's sandboxes share /run/corral unless told otherwise
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const bool known = std::any_of(listed.begin(), listed.end(), [&](const SandboxInfo& info) {
      return info.record.init_pid == pid;
    });
    if (!known && IsSandboxInit(static_cast<pid_t>(pid), uid)) out.push_back(pid);
  }
  ::closedir(proc);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace corral::runtime
