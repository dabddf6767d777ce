#include "runtime/oci/oci_runtime.h"

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace corral::runtime::oci {

namespace {

constexpr const char* kFallbackPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string Lookup(const std::string& name) {
  const char* env = std::getenv("PATH");
  std::string dirs = (env != nullptr ? std::string(env) + ":" : std::string()) + kFallbackPath;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') {
      std::string path = dir + "/" + name;
      if (::access(path.c_str(), X_OK) == 0) return path;
    }
    start = end + 1;
  }
  return "";
}

OciRuntime Make(const std::string& name, const std::string& path) {
  OciRuntime rt{name, path, false};
  rt.hide_unified_cgroup = name == "crun" && HybridCgroupHost();
  return rt;
}

}  // namespace

bool HybridCgroupHost() {
  return ::access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0 &&
         ::access("/sys/fs/cgroup/memory/cgroup.procs", F_OK) == 0;
}

Result<OciRuntime> FindOciRuntime(const OciRuntimeChoice& choice) {
  if (choice.name == OciRuntimeName::kPath) {
    const std::string& path = choice.path;
    if (::access(path.c_str(), X_OK) != 0) {
      return Error::FromErrno(errno, "oci_runtime " + path);
    }
    std::string base = path.substr(path.rfind('/') + 1);
    if (base != "crun" && base != "runc") {
      return Error(ErrorCode::kInvalidArgument,
                   "oci_runtime " + path + ": corral drives crun or runc (the program's name)");
    }
    return Make(base, path);
  }
  const bool any = choice.name == OciRuntimeName::kAuto;
  for (OciRuntimeName name : {OciRuntimeName::kCrun, OciRuntimeName::kRunc}) {
    if (!any && choice.name != name) continue;
    const std::string program(Name(name));
    if (std::string path = Lookup(program); !path.empty()) return Make(program, path);
  }
  return Error(
      ErrorCode::kNotFound,
      std::string("mode container: no OCI runtime found (") +
          (any ? "looked for crun, then runc" : "looked for " + std::string(Name(choice))) +
          " in $PATH and " + kFallbackPath + "); install crun or runc, or use mode process");
}

Result<OciRuntime> FindOciRuntime(const std::string& choice) {
  std::optional<OciRuntimeChoice> parsed = ParseOciRuntime(choice);
  if (!parsed) {
    return Error(ErrorCode::kInvalidArgument, "oci_runtime: " + BadOciRuntimeText(choice));
  }
  return FindOciRuntime(*parsed);
}

int HideUnifiedCgroup() {
  if (::unshare(CLONE_NEWNS) != 0) return errno;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (::umount2("/sys/fs/cgroup/unified", MNT_DETACH) != 0) return errno;
  return 0;
}

std::vector<std::string> RuntimeArgv(const OciRuntime& rt, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {rt.path};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace corral::runtime::oci
