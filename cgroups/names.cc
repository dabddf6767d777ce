#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "base/files.h"
#include "cgroups/cgroup.h"
#include "cgroups/internal.h"

namespace corral::cgroups {

namespace internal {

namespace {

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool IsValidName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  for (char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

Status ValidateName(const std::string& name, const std::string& what) {
  if (IsValidName(name)) return Ok();
  return Error(ErrorCode::kInvalidArgument,
               what + " '" + name + "': must match [A-Za-z0-9_.-]{1,128} and not be . or ..");
}

Result<std::vector<std::string>> ParentComponents(const std::string& parent) {
  std::vector<std::string> out;
  std::stringstream ss(parent);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;  // leading '/' and doubled slashes
    auto valid = ValidateName(part, "cgroups.parent component");
    if (!valid) return valid.error().WithContext("cgroups.parent '" + parent + "'");
    out.push_back(part);
  }
  if (out.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "cgroups.parent '" + parent +
                     "': must name a cgroup below the hierarchy root, not the root itself");
  }
  return out;
}

std::optional<pid_t> ParseOneShotName(const std::string& name) {
  const std::string prefix = "run-";
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::string rest = name.substr(prefix.size());
  size_t dash = rest.find('-');
  if (dash == std::string::npos) return std::nullopt;
  std::string pid = rest.substr(0, dash);
  std::string counter = rest.substr(dash + 1);
  if (!AllDigits(pid) || !AllDigits(counter)) return std::nullopt;
  long long v = std::strtoll(pid.c_str(), nullptr, 10);
  if (v <= 0 || v > 0x7fffffff) return std::nullopt;
  return static_cast<pid_t>(v);
}

std::vector<std::string> SelectOrphans(const std::vector<std::string>& names,
                                       const std::function<bool(pid_t)>& is_live) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    std::optional<pid_t> pid = ParseOneShotName(n);
    if (pid && !is_live(*pid)) out.push_back(n);
  }
  return out;
}

bool IsLiveCorral(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::string proc = "/proc/" + std::to_string(pid);
  auto stat = ReadFile(proc + "/stat");
  if (!stat) return false;
  // The state follows the last ')' (comm itself may contain parentheses).
  size_t paren = stat->rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat->size()) return false;
  char state = (*stat)[paren + 2];
  if (state == 'Z' || state == 'X') return false;
  auto comm = ReadFile(proc + "/comm");
  if (!comm) return false;
  std::string c = Trim(*comm);
  if (c.rfind("corral", 0) == 0) return true;
  // Embedders and test binaries run the library under another name; a process with our
  // own name is treated as one of us.
  auto self = ReadFile("/proc/self/comm");
  return self && Trim(*self) == c;
}

}  // namespace internal

std::string CgroupManager::OneShotName() {
  static std::atomic<uint64_t> counter{0};
  return "run-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

}  // namespace corral::cgroups
