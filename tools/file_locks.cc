#include "tools/file_locks.h"

#include <map>

namespace corral::tools {

std::shared_ptr<std::mutex> FileLock(const std::string& sandbox_id, const std::string& path) {
  static std::mutex registry_mu;
  static std::map<std::string, std::weak_ptr<std::mutex>> registry;
  std::lock_guard<std::mutex> lock(registry_mu);
  // '\0' cannot occur in an id or a path, so the key is unambiguous.
  std::string key = sandbox_id + '\0' + path;
  if (auto existing = registry[key].lock()) return existing;
  auto fresh = std::make_shared<std::mutex>();
  registry[key] = fresh;
  for (auto it = registry.begin(); it != registry.end();) {
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  }
  return fresh;
}

}  // namespace corral::tools
