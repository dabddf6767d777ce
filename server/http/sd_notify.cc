#include "server/http/sd_notify.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace corral::server {

bool SdNotify(const std::string& state) {
  if (std::getenv("NOTIFY_SOCKET") == nullptr) return true;
  using Fn = int (*)(int, const char*);
  static Fn fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = ::dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) fn = reinterpret_cast<Fn>(::dlsym(lib, "sd_notify"));
  });
  return fn != nullptr && fn(0, state.c_str()) > 0;
}

}  // namespace corral::server
