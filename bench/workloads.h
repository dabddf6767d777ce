// The workloads every launcher runs: tiny programs, so that what is measured is the cost
// of the isolation around them, not the work. argv[0] is always an absolute host path.
#pragma once

#include <string>
#include <vector>

namespace corral::bench {

struct Workload {
  std::string name;               // shown in tables: "/bin/true", "sh -c 'echo hi'"
  std::vector<std::string> argv;  // argv[0] absolute
  // The same command as one shell string, for launchers that take a script (tool bash).
  std::string shell;
};

// /bin/true, sh -c 'echo hi', and `python3 -c pass` when /usr/bin/python3 is executable
// (the host's system interpreter: a shim in $HOME would not exist inside a jail).
std::vector<Workload> DefaultWorkloads();

// Searches $PATH for an executable named `name`; "" if none.
std::string FindOnPath(const std::string& name);

}  // namespace corral::bench
