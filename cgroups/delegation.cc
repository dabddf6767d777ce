#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "cgroups/cgroup.h"

namespace corral::cgroups {

namespace {

constexpr const char* kControllers[] = {"memory", "cpu", "pids"};

bool HasWord(const std::string& text, const std::string& word) {
  size_t pos = 0;
  while ((pos = text.find(word, pos)) != std::string::npos) {
    bool start = pos == 0 || text[pos - 1] == ' ' || text[pos - 1] == '\n';
    size_t end = pos + word.size();
    bool stop = end == text.size() || text[end] == ' ' || text[end] == '\n';
    if (start && stop) return true;
    pos = end;
  }
  return false;
}

// "0::/user.slice/..." -> "/user.slice/..."
std::optional<std::string> V2Path(const std::string& self_cgroup) {
  size_t pos = self_cgroup.rfind("0::", 0) == 0 ? 0 : self_cgroup.find("\n0::");
  if (pos == std::string::npos) return std::nullopt;
  if (pos != 0) pos += 1;
  size_t end = self_cgroup.find('\n', pos);
  return self_cgroup.substr(pos + 3, end == std::string::npos ? end : end - pos - 3);
}

bool OwnedBy(const std::string& path, uid_t uid) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && st.st_uid == uid;
}

}  // namespace

DelegatedCgroup FindDelegatedCgroup(const cgroups::HierarchyInfo& info,
                                    const std::string& self_cgroup, uid_t uid) {
  DelegatedCgroup out;
  std::string root_controllers;
  for (const auto& c : info.v2_controllers) root_controllers += c + " ";
  for (const char* c : kControllers) {
    if (!info.v2_mounted || !HasWord(root_controllers, c)) {
      out.why_not = std::string("the ") + c +
                    " controller is not on cgroup v2 here (this host has it as a cgroup v1 "
                    "hierarchy, which only root can write to)";
      return out;
    }
  }
  auto path = V2Path(self_cgroup);
  if (!path) {
    out.why_not = "this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)";
    return out;
  }
  std::string dir = info.v2_mount + (*path == "/" ? "" : *path);
  for (const char* file : {"", "/cgroup.procs", "/cgroup.subtree_control"}) {
    if (!OwnedBy(dir + file, uid) || ::access((dir + file).c_str(), W_OK) != 0) {
      out.why_not = "the cgroup this process runs in, " + dir + ", is not delegated to it (" +
                    (dir + file) + " is not owned and writable by uid " + std::to_string(uid) + ")";
      return out;
    }
  }
  auto offered = ReadFile(dir + "/cgroup.controllers");
  for (const char* c : kControllers) {
    if (!offered || !HasWord(*offered, c)) {
      out.why_not = "the delegated cgroup " + dir + " is not given the " + c +
                    " controller by its parent (" + dir + "/cgroup.controllers)";
      return out;
    }
  }
  out.dir = dir;
  return out;
}

}  // namespace corral::cgroups
