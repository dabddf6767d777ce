#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "base/files.h"
#include "cgroups/cgroup.h"
#include "cgroups/internal.h"

namespace corral::cgroups {

namespace {

using internal::JoinPath;

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// mountinfo escapes space, tab, newline and backslash in paths as \ooo.
std::string DecodeOctal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
      out.push_back(static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

const std::string* V1MountOf(const HierarchyInfo& info, const std::string& controller) {
  for (const auto& [c, mount] : info.v1_mounts) {
    if (c == controller) return &mount;
  }
  return nullptr;
}

std::string JoinList(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Empty when v2 can enforce everything; else what it lacks.
std::string V2Missing(const HierarchyInfo& info) {
  if (!info.v2_mounted) return "cgroup v2 is not mounted";
  std::vector<std::string> missing;
  for (const char* c : {"memory", "cpu", "pids"}) {
    if (!Has(info.v2_controllers, c)) missing.push_back(c);
  }
  if (missing.empty()) return "";
  return "cgroup v2 at " + info.v2_mount + " lacks controllers " + JoinList(missing) +
         " (offers: " +
         (info.v2_controllers.empty() ? std::string("none") : JoinList(info.v2_controllers)) + ")";
}

// Empty when v1 can enforce everything; else what it lacks.
std::string V1Missing(const HierarchyInfo& info) {
  std::vector<std::string> missing;
  for (const char* c : {"memory", "cpu", "pids", "freezer"}) {
    if (V1MountOf(info, c) == nullptr) missing.push_back(c);
  }
  if (!missing.empty()) return "cgroup v1 lacks mounted controllers " + JoinList(missing);
  const std::string& cpu = *V1MountOf(info, "cpu");
  if (!internal::PathExists(JoinPath(cpu, "cpu.cfs_quota_us"))) {
    return "cgroup v1 cpu controller at " + cpu +
           " has no cpu.cfs_quota_us (kernel without CFS bandwidth control)";
  }
  return "";
}

std::string KernelRelease(const ManagerOptions& options) {
  if (!options.kernel_release.empty()) return options.kernel_release;
  struct utsname u {};
  if (::uname(&u) != 0) return "";
  return u.release;
}

}  // namespace

const char* DriverName(Driver d) {
  switch (d) {
    case Driver::kV1:
      return "v1";
    case Driver::kV2:
      return "v2";
  }
  return "unknown";
}

namespace internal {

Result<std::vector<MountEntry>> ParseMountinfo(const std::string& text) {
  std::vector<MountEntry> out;
  std::istringstream lines(text);
  std::string line;
  int lineno = 0;
  while (std::getline(lines, line)) {
    ++lineno;
    if (Trim(line).empty()) continue;
    std::vector<std::string> f = SplitWords(line);
    // id parent maj:min root mount_point options [optional...] - fstype source super
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || dash == f.end() || dash - f.begin() < 6 || f.end() - dash < 4) {
      return Error(ErrorCode::kIo,
                   "mountinfo line " + std::to_string(lineno) + ": malformed: '" + line + "'");
    }
    out.push_back({DecodeOctal(f[4]), *(dash + 1), *(dash + 3)});
  }
  return out;
}

std::vector<std::string> V1Controllers(const std::string& super_options) {
  // Mount options that can appear next to the controller names of a v1 hierarchy.
  static const char* const kNotControllers[] = {"rw",
                                                "ro",
                                                "noprefix",
                                                "xattr",
                                                "clone_children",
                                                "cpuset_v2_mode",
                                                "favordynmods",
                                                "nofavordynmods",
                                                "all",
                                                "none"};
  std::vector<std::string> out;
  std::stringstream ss(super_options);
  std::string opt;
  while (std::getline(ss, opt, ',')) {
    if (opt.empty() || opt.find('=') != std::string::npos) continue;  // name=, release_agent=
    bool skip = false;
    for (const char* n : kNotControllers) skip = skip || opt == n;
    if (!skip) out.push_back(opt);
  }
  return out;
}

bool KernelAtLeast(const std::string& release, int major, int minor) {
  char* end = nullptr;
  long maj = std::strtol(release.c_str(), &end, 10);
  if (end == release.c_str()) return false;
  long min = 0;
  if (*end == '.') min = std::strtol(end + 1, nullptr, 10);
  return maj > major || (maj == major && min >= minor);
}

}  // namespace internal

Result<Driver> SelectDriver(const HierarchyInfo& info, const std::string& requested) {
  if (requested == "auto") {
    std::string v2 = V2Missing(info);
    if (v2.empty()) return Driver::kV2;
    std::string v1 = V1Missing(info);
    if (v1.empty()) return Driver::kV1;
    return Error(ErrorCode::kUnsupported,
                 "no usable cgroup driver (need memory, cpu and pids): " + v2 + "; " + v1);
  }
  // An explicit driver only needs its filesystem (and, on v1, the freezer that KillAll
  // relies on); a missing controller surfaces when a limit needs it.
  if (requested == "v2") {
    if (!info.v2_mounted) {
      return Error(ErrorCode::kUnsupported, "cgroups driver 'v2': cgroup v2 is not mounted");
    }
    return Driver::kV2;
  }
  if (requested == "v1") {
    if (V1MountOf(info, "freezer") == nullptr) {
      return Error(ErrorCode::kUnsupported,
                   "cgroups driver 'v1': the freezer controller is not mounted (needed to kill "
                   "every process of a cgroup reliably)");
    }
    return Driver::kV1;
  }
  return Error(ErrorCode::kInvalidArgument,
               "cgroups driver '" + requested + "': must be auto, v1 or v2");
}

Result<HierarchyInfo> Detect(const ManagerOptions& options) {
  auto text = ReadFile(options.mountinfo_path);
  if (!text) return text.error().WithContext("reading the mount table");
  ASSIGN_OR_RETURN(auto mounts, internal::ParseMountinfo(*text));

  HierarchyInfo info;
  for (const auto& m : mounts) {
    std::string mount = options.fs_root_override + m.mount_point;
    if (m.fstype == "cgroup2") {
      // Several cgroup2 mounts show the same single hierarchy; the first one is used.
      if (!info.v2_mounted) {
        info.v2_mounted = true;
        info.v2_mount = mount;
      }
    } else if (m.fstype == "cgroup") {
      for (const auto& c : internal::V1Controllers(m.super_options)) {
        if (V1MountOf(info, c) == nullptr) info.v1_mounts.emplace_back(c, mount);
      }
    }
  }
  if (info.v2_mounted) {
    ASSIGN_OR_RETURN(auto controllers,
                     internal::ReadIfExists(JoinPath(info.v2_mount, "cgroup.controllers")));
    if (controllers) info.v2_controllers = internal::SplitWords(*controllers);
  }

  auto driver = SelectDriver(info, options.driver);
  if (driver) {
    info.driver = *driver;
  } else if (driver.error().code() == ErrorCode::kInvalidArgument) {
    return driver.error();
  } else {
    info.unusable_reason = driver.error().message();
  }
  // CLONE_INTO_CGROUP arrived in 5.7 and works on v2 only.
  info.clone_into_cgroup =
      info.driver == Driver::kV2 && internal::KernelAtLeast(KernelRelease(options), 5, 7);
  return info;
}

}  // namespace corral::cgroups
