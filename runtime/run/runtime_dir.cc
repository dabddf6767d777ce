#include "runtime/run/runtime_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace corral::runtime {

std::string RuntimeDir() {
  const char* env = std::getenv("CORRAL_RUNTIME_DIR");
  if (env != nullptr && *env == '/') return env;
  if (::geteuid() == 0) return "/run/corral";
  // A non-root caller's own runtime directory (systemd-logind makes it, owner-only).
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && *xdg == '/') return std::string(xdg) + "/corral";
  return "/run/user/" + std::to_string(::geteuid()) + "/corral";
}

Result<std::string> UsableRuntimeDir() {
  std::string dir = RuntimeDir();
  const char* env = std::getenv("CORRAL_RUNTIME_DIR");
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  bool chosen = (env != nullptr && *env == '/') || (xdg != nullptr && *xdg == '/');
  if (::geteuid() == 0 || chosen) return dir;
  // The /run/user/<uid> fallback exists only in a logind session.
  std::string parent = dir.substr(0, dir.rfind('/'));
  struct stat st;
  if (::stat(parent.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid()) {
    return dir;
  }
  return Error(ErrorCode::kUnsupported,
               "no runtime directory for uid " + std::to_string(::geteuid()) +
                   ": XDG_RUNTIME_DIR is not set and " + parent +
                   " is not a directory of yours; set CORRAL_RUNTIME_DIR to a directory only "
                   "you can write that every shell of yours sets the same, e.g. `mkdir -p -m "
                   "700 ~/.local/state/corral && export "
                   "CORRAL_RUNTIME_DIR=~/.local/state/corral` in your shell's profile: corral "
                   "keeps its sandboxes' records there, and a shell with another directory "
                   "does not see them (a fresh mktemp -d per shell would hide them)");
}

Result<std::string> StateDir() {
  if (const char* env = std::getenv("CORRAL_STATE_DIR"); env != nullptr && *env != '\0') {
    if (*env != '/') {
      return Error(ErrorCode::kInvalidArgument,
                   "CORRAL_STATE_DIR must be absolute: " + std::string(env));
    }
    return std::string(env);
  }
  if (::geteuid() == 0) return std::string("/var/lib/corral");
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/corral";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.local/state/corral";
  }
  return Error(ErrorCode::kInvalidArgument,
               "no state directory: set CORRAL_STATE_DIR, XDG_STATE_HOME or HOME");
}

}  // namespace corral::runtime
