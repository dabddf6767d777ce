#include "bench/workloads.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace corral::bench {

std::vector<Workload> DefaultWorkloads() {
  std::vector<Workload> w;
  w.push_back({"/bin/true", {"/bin/true"}, "true"});
  w.push_back({"sh -c 'echo hi'", {"/bin/sh", "-c", "echo hi"}, "echo hi"});
  if (access("/usr/bin/python3", X_OK) == 0) {
    w.push_back(
        {"python3 -c pass", {"/usr/bin/python3", "-c", "pass"}, "/usr/bin/python3 -c pass"});
  }
  return w;
}

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace corral::bench
