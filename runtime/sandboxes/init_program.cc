#include "runtime/sandboxes/init_program.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/trusted_files.h"

namespace corral::runtime {

namespace {

std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("CORRAL_INIT_PROGRAM"); env != nullptr && *env != '\0') {
    out.emplace_back(env);
    return out;  // explicit: no silent fallback to another file
  }
  if (std::string dir = OwnExecutableDir(); !dir.empty()) out.push_back(dir + "/corral-init");
  out.emplace_back(CORRAL_INIT_INSTALL_PATH);
  out.emplace_back(CORRAL_INIT_BUILD_PATH);
  return out;
}

Result<UniqueFd> OpenTrusted(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode) || (st.st_mode & S_IXUSR) == 0) {
    return Error(ErrorCode::kInvalidArgument, path + ": not an executable file");
  }
  RETURN_IF_ERROR(CheckOwnedByRootOrUs(path, st));
  return fd;
}

}  // namespace

Result<InitProgram> FindInitProgram() {
  std::string tried;
  for (const std::string& path : Candidates()) {
    auto fd = OpenTrusted(path);
    if (fd) return InitProgram{path, std::move(*fd)};
    tried += (tried.empty() ? "" : "; ") + fd.error().message();
  }
  return Error(ErrorCode::kNotFound, "corral-init not found (" + tried + ")");
}

Result<UniqueFd> OpenInitProgram() {
  ASSIGN_OR_RETURN(InitProgram program, FindInitProgram());
  return std::move(program.fd);
}

}  // namespace corral::runtime
