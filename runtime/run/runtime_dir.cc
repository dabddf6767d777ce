#include "runtime/run/runtime_dir.h"

#include <cstdlib>

namespace corral::runtime {

std::string RuntimeDir() {
  const char* env = std::getenv("CORRAL_RUNTIME_DIR");
  return env != nullptr && *env == '/' ? env : "/run/corral";
}

}  // namespace corral::runtime
