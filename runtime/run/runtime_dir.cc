#include "runtime/run/runtime_dir.h"

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

}  // namespace corral::runtime
