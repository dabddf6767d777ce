#include "server/aio/context.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace corral::server::aio {
namespace {

using nlohmann::json;

// The directories searched for interpreters, as the sandbox's PATH would find them.
constexpr const char* kBinDirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};

UniqueFd OpenInRoot(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return UniqueFd(static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how)));
}

std::string ReadSmall(int fd, size_t max) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while (out.size() < max && (n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

struct Entry {
  std::string dir, name;
  std::string link;  // readlink target, "" for a regular file
};

// Executable files and symlinks of `dir` in the sandbox whose names match `re`.
std::vector<Entry> Candidates(int root, const char* dir, const std::regex& re) {
  std::vector<Entry> out;
  UniqueFd d = OpenInRoot(root, dir, O_RDONLY | O_DIRECTORY);
  if (!d) return out;
  int dup_fd = ::dup(d.get());
  DIR* dp = dup_fd >= 0 ? ::fdopendir(dup_fd) : nullptr;
  if (dp == nullptr) {
    if (dup_fd >= 0) ::close(dup_fd);
    return out;
  }
  while (dirent* e = ::readdir(dp)) {
    std::string name = e->d_name;
    if (!std::regex_match(name, re)) continue;
    struct stat st;
    if (::fstatat(d.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    Entry entry{dir, name, ""};
    if (S_ISLNK(st.st_mode)) {
      char target[512];
      ssize_t n = ::readlinkat(d.get(), name.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      entry.link.assign(target, static_cast<size_t>(n));
    } else if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
      continue;
    }
    out.push_back(std::move(entry));
  }
  ::closedir(dp);
  return out;
}

// One ToolSpec per real file; a symlink in the same directory naming it is an alias.
json Specs(const std::vector<Entry>& entries, const std::map<std::string, std::string>& versions) {
  json list = json::array();
  for (const Entry& e : entries) {
    if (!e.link.empty()) continue;
    json spec = {{"bin", e.dir + "/" + e.name}};
    if (auto v = versions.find(e.name); v != versions.end() && !v->second.empty())
      spec["ver"] = v->second;
    json alias = json::array();
    for (const Entry& a : entries) {
      if (a.dir == e.dir && (a.link == e.name || a.link == e.dir + "/" + e.name))
        alias.push_back(a.name);
    }
    if (!alias.empty()) spec["alias"] = alias;
    list.push_back(std::move(spec));
  }
  return list;
}

std::string NodeVersion(int root) {
  UniqueFd fd = OpenInRoot(root, "/usr/include/node/node_version.h", O_RDONLY);
  if (!fd) return "";
  std::string text = ReadSmall(fd.get(), 64 << 10);
  std::string parts[3];
  const char* names[3] = {"NODE_MAJOR_VERSION", "NODE_MINOR_VERSION", "NODE_PATCH_VERSION"};
  for (int i = 0; i < 3; ++i) {
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(std::string("#define ") + names[i] + " (\\d+)")))
      return "";
    parts[i] = m[1];
  }
  return parts[0] + "." + parts[1] + "." + parts[2];
}

}  // namespace

json SandboxRuntimes(pid_t init_pid) {
  json runtime = {{"python", json::array()}, {"nodejs", json::array()}};
  UniqueFd root(::open(("/proc/" + std::to_string(init_pid) + "/root").c_str(),
                       O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return runtime;
  static const std::regex kPython(R"(python3(\.\d+)?|python)");
  static const std::regex kNode(R"(node|nodejs)");
  std::set<std::pair<dev_t, ino_t>> seen;  // /bin is often a symlink to /usr/bin
  for (const char* dir : kBinDirs) {
    UniqueFd d = OpenInRoot(root.get(), dir, O_RDONLY | O_DIRECTORY);
    struct stat st;
    if (!d || ::fstat(d.get(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) continue;
    auto py = Candidates(root.get(), dir, kPython);
    std::map<std::string, std::string> versions;
    for (const Entry& e : py) {
      if (e.name.rfind("python3.", 0) == 0) versions[e.name] = e.name.substr(6);
    }
    for (auto& s : Specs(py, versions)) runtime["python"].push_back(std::move(s));
    auto node = Candidates(root.get(), dir, kNode);
    std::map<std::string, std::string> node_versions;
    const std::string nv = node.empty() ? "" : NodeVersion(root.get());
    for (const Entry& e : node) node_versions[e.name] = nv;
    for (auto& s : Specs(node, node_versions)) runtime["nodejs"].push_back(std::move(s));
  }
  return runtime;
}

json ListeningPorts(pid_t init_pid, bool own_network_namespace) {
  json out = json::array();
  if (!own_network_namespace) return out;
  std::set<unsigned> ports;
  for (const char* file : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(init_pid) + "/net/" + file);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // "  0: 0100007F:1F90 00000000:0000 0A ..."
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      if (!(fields >> slot >> local >> remote >> state) || state != "0A") continue;
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos) continue;
      ports.insert(static_cast<unsigned>(std::strtoul(local.c_str() + colon + 1, nullptr, 16)));
    }
  }
  for (unsigned p : ports) out.push_back(std::to_string(p));
  return out;
}

}  // namespace corral::server::aio
