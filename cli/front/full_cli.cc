#include "cli/front/full_cli.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace corral::cli::front {

namespace {

std::string OwnExecutable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

int ExecFullCli(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::string self = OwnExecutable();
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(kCliProgramEnv); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);  // explicit: no silent fallback to another file
  } else {
    // Next to this program (a build tree), then as installed relative to it (bin/ and
    // libexec/corral/ under one prefix, wherever it was moved), then the configured prefix.
    if (size_t slash = self.rfind('/'); slash != std::string::npos) {
      std::string dir = self.substr(0, slash);
      candidates.push_back(dir + "/corral-cli");
      candidates.push_back(dir + "/../libexec/corral/corral-cli");
    }
    candidates.emplace_back(CORRAL_CLI_INSTALL_PATH);
  }
  if (!self.empty()) ::setenv(kFrontExeEnv, self.c_str(), 1);
  int first_error = 0;
  for (const std::string& path : candidates) {
    ::execv(path.c_str(), argv.data());
    if (first_error == 0 || first_error == ENOENT) first_error = errno;
  }
  std::string looked;
  for (const std::string& path : candidates) looked += (looked.empty() ? "" : ", ") + path;
  std::fprintf(stderr, "corral: cannot start the corral CLI program (looked for %s): %s\n",
               looked.c_str(), std::strerror(first_error));
  return 125;
}

}  // namespace corral::cli::front
