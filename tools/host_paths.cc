#include "tools/host_paths.h"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "runtime/run/runtime_dir.h"

namespace corral::tools {
namespace {

void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  if (from.empty() || from == "/") return;
  for (size_t pos = 0; (pos = text->find(from, pos)) != std::string::npos;) {
    text->replace(pos, from.size(), to);
    pos += to.size();
  }
}

std::string Canonical(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  std::string out = real != nullptr ? real : path;
  std::free(real);
  return out;
}

}  // namespace

std::string MaskHostPaths(std::string text, const runtime::ProviderConfig& config,
                          const runtime::ThreadDirs* dirs) {
  std::vector<std::pair<std::string, std::string>> map;
  auto add = [&map](const std::string& host, const std::string& shown) {
    map.emplace_back(host, shown);
    std::string real = Canonical(host);
    if (real != host) map.emplace_back(real, shown);
  };
  if (dirs != nullptr) {
    add(dirs->user_data, "/mnt/user-data");
    add(dirs->acp_workspace, "/mnt/acp-workspace");
  }
  if (config.skills_path) add(*config.skills_path, config.skills_container_path);
  for (const auto& m : config.mounts) add(m.host_path, m.container_path);
  add(config.base_dir, "<base_dir>");
  add(runtime::RuntimeDir(), "<runtime_dir>");
  // Longest first, so that a thread's directory wins over the base directory holding it.
  std::stable_sort(map.begin(), map.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [host, shown] : map) ReplaceAll(&text, host, shown);
  return text;
}

}  // namespace corral::tools
