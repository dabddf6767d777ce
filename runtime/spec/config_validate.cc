// Validate(): every rule a merged JailSpec must satisfy before it is planned. Each
// problem names the config key path (not the C++ member), so a user can find it in
// their YAML or on the command line.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "base/files.h"
#include "jail/seccomp_builtins.h"
#include "runtime/net/rules.h"
#include "runtime/spec/config.h"

namespace corral::runtime {
namespace {

// Container paths corral mounts itself. A user mount may not be one of them, lie
// below one, or cover one.
constexpr struct {
  const char* path;
  const char* why;
} kReservedContainerPaths[] = {
    {"/proc", "corral mounts a fresh procfs there"},
    {"/dev", "corral builds a minimal /dev there"},
    {"/sys", "reserved for kernel filesystems"},
    {"/tmp", "corral mounts the jail's size-limited tmpfs there"},
    {"/mnt/skills", "reserved for skills_dir"},
    {"/mnt/user-data", "reserved for user_data_dir"},
    {"/mnt/acp-workspace", "reserved for acp_workspace_dir"},
};

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s.size() > 80 ? s.substr(0, 80) + "..." : s) {
    if (c == '\0') {
      out += "\\0";
    } else if (c == '"' || c == '\\') {
      out += std::string("\\") + c;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

class ValidationProblems {
 public:
  void Add(const std::string& field, const std::string& what, const std::string& got) {
    list_.push_back(field + ": " + what + " (got " + got + ")");
  }
  // A problem already worded "field: what" (the network policy's rule errors).
  void AddLine(std::string line) { list_.push_back(std::move(line)); }
  std::vector<std::string> Take() { return std::move(list_); }

 private:
  std::vector<std::string> list_;
};

// The first check of every string field: the kernel (and libc) read these as C strings,
// so one with a NUL would be checked whole and used cut short. True if it was refused.
bool RefusedNul(ValidationProblems& p, const std::string& field, const std::string& value) {
  if (value.find('\0') == std::string::npos) return false;
  p.Add(field, "must not contain a NUL byte", Quote(value));
  return true;
}

bool StartsWithDir(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir + "/", 0) == 0;
}

// Why `path` is not an absolute, normalised path; empty if it is.
std::string PathShapeProblem(const std::string& path) {
  if (path.find('\0') != std::string::npos) return "must not contain a NUL byte";
  if (path.empty() || path[0] != '/') return "must be an absolute path";
  if (path == "/") return "";
  size_t start = 1;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash - start);
    if (part.empty()) return "must be normalised: no empty components (\"//\" or a trailing \"/\")";
    if (part == "." || part == "..") return "must be normalised: no \".\" or \"..\" components";
    if (slash == std::string::npos) return "";
    start = slash + 1;
  }
}

enum class HostKind { kAny, kDirectory, kRegularFile };

// Checks shape, then existence on the host. Returns false if a problem was added.
bool CheckHostPath(ValidationProblems& p, const std::string& field, const std::string& path,
                   HostKind kind) {
  if (std::string why = PathShapeProblem(path); !why.empty()) {
    p.Add(field, why, Quote(path));
    return false;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    p.Add(field,
          err == ENOENT ? "does not exist on the host"
                        : std::string("cannot be checked: ") + std::strerror(err),
          Quote(path));
    return false;
  }
  if (kind == HostKind::kDirectory && !S_ISDIR(st.st_mode)) {
    p.Add(field, "must be a directory", Quote(path));
    return false;
  }
  if (kind == HostKind::kRegularFile && !S_ISREG(st.st_mode)) {
    p.Add(field, "must be a regular file", Quote(path));
    return false;
  }
  return true;
}

// `read_only`: a read-only mount strictly below /mnt/skills is a skills view (DeerFlow's
// /mnt/skills/{public,custom,legacy,integrations}), allowed beside or inside skills_dir.
void CheckContainerPath(ValidationProblems& p, const std::string& field, const std::string& path,
                        bool read_only) {
  if (std::string why = PathShapeProblem(path); !why.empty()) {
    p.Add(field, why, Quote(path));
    return;
  }
  if (path == "/") {
    p.Add(field, "must not be / (use rootfs to replace the root)", Quote(path));
    return;
  }
  for (const auto& reserved : kReservedContainerPaths) {
    if (read_only && std::string(reserved.path) == "/mnt/skills" && path != reserved.path &&
        StartsWithDir(path, reserved.path)) {
      continue;
    }
    if (StartsWithDir(path, reserved.path)) {
      p.Add(field, std::string("is reserved: ") + reserved.why, Quote(path));
      return;
    }
    if (StartsWithDir(reserved.path, path)) {
      p.Add(field, std::string("would cover ") + reserved.path + ", which is reserved",
            Quote(path));
      return;
    }
  }
}

void CheckArgv(ValidationProblems& p, const std::vector<std::string>& argv) {
  if (argv.empty()) {
    p.Add("argv", "no command given", "an empty command");
    return;
  }
  if (argv[0].empty()) p.Add("argv[0]", "the command name must not be empty", "\"\"");
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].find('\0') != std::string::npos) {
      p.Add("argv[" + std::to_string(i) + "]", "must not contain a NUL byte", Quote(argv[i]));
    }
  }
}

void CheckEnv(ValidationProblems& p, const std::vector<std::pair<std::string, std::string>>& env) {
  for (size_t i = 0; i < env.size(); ++i) {
    const auto& [name, value] = env[i];
    const std::string field = "env[" + std::to_string(i) + "]";
    const bool name_nul = RefusedNul(p, field + ".name", name);
    RefusedNul(p, field + ".value", value);
    if (name_nul) continue;
    const bool name_ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                         std::all_of(name.begin(), name.end(), [](char c) {
                           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                         });
    if (!name_ok) p.Add(field + ".name", "must match [A-Za-z_][A-Za-z0-9_]*", Quote(name));
  }
}

// The checks of the fields a prepared jail takes from each run (see ValidateLateFields):
// shared by the full validation and the per-run one.
void CheckWorkdir(ValidationProblems& p, const std::optional<std::string>& workdir) {
  if (!workdir) return;
  if (std::string why = PathShapeProblem(*workdir); !why.empty()) {
    p.Add("workdir", why, Quote(*workdir));
  }
}

void CheckTimeoutAndOutput(ValidationProblems& p, const LimitsSpec& l) {
  if (!(l.timeout_seconds >= 0) || !std::isfinite(l.timeout_seconds)) {
    p.Add("limits.timeout", "must be 0 (none) or more seconds", FormatNumber(l.timeout_seconds));
  }
  if (l.output_limit_bytes < 1) {
    p.Add("limits.output", "must be at least 1 byte", std::to_string(l.output_limit_bytes));
  }
}

void CheckDirs(ValidationProblems& p, const JailSpec& spec) {
  if (spec.rootfs) {
    if (*spec.rootfs == "/") {
      p.Add("rootfs", "must not be the host's / (leave rootfs unset to bind system dirs)", "\"/\"");
    } else {
      CheckHostPath(p, "rootfs", *spec.rootfs, HostKind::kDirectory);
    }
  }
  const std::pair<const char*, const std::optional<std::string>*> dirs[] = {
      {"skills_dir", &spec.skills_dir},
      {"user_data_dir", &spec.user_data_dir},
      {"acp_workspace_dir", &spec.acp_workspace_dir},
  };
  for (const auto& [field, dir] : dirs) {
    if (*dir) CheckHostPath(p, field, **dir, HostKind::kDirectory);
  }
  CheckWorkdir(p, spec.workdir);
  if (spec.workspace_overlay && !spec.user_data_dir) {
    p.Add("workspace_overlay", "needs user_data_dir (its workspace/ is what is overlaid)", "true");
  }
  if (spec.workspace_overlay && spec.rootless) {
    p.Add("workspace_overlay", "needs root (corral mounts the overlay in the host's namespace)",
          "true with rootless");
  }
}

void CheckMounts(ValidationProblems& p, const std::vector<MountSpec>& mounts) {
  std::map<std::string, size_t> first_use;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const std::string field = "mounts[" + std::to_string(i) + "]";
    const MountSpec& m = mounts[i];
    if (m.volume.empty()) {
      if (m.host_path.empty()) {
        p.Add(field, "needs host_path (a host directory or file) or volume (a volume's name)",
              "neither");
      } else {
        CheckHostPath(p, field + ".host_path", m.host_path, HostKind::kAny);
      }
    } else if (!IsValidVolumeName(m.volume)) {
      p.Add(field + ".volume", kVolumeNameRule, Quote(m.volume));
    } else if (!m.host_path.empty() && m.disk_uid == std::nullopt) {
      // Attaching a volume sets both (and the ids); a config gives one or the other.
      p.Add(field, "gives both host_path and volume; give one", Quote(m.host_path));
    } else if (!m.host_path.empty()) {
      CheckHostPath(p, field + ".host_path", m.host_path, HostKind::kAny);
    }
    CheckContainerPath(p, field + ".container_path", mounts[i].container_path, mounts[i].read_only);
    auto [it, inserted] = first_use.emplace(mounts[i].container_path, i);
    if (!inserted) {
      p.Add(field + ".container_path",
            "is also the container_path of mounts[" + std::to_string(it->second) + "]",
            Quote(mounts[i].container_path));
    }
  }
}

// RFC 1123: dot-separated labels of letters, digits and '-', not starting or ending with
// '-', each 1-63 characters; the kernel allows 64 in all.
void CheckHostname(ValidationProblems& p, const std::string& hostname) {
  if (RefusedNul(p, "hostname", hostname)) return;
  std::string why;
  if (hostname.empty() || hostname.size() > 64) {
    why = "must be 1 to 64 characters";
  } else {
    size_t start = 0;
    while (why.empty()) {
      const size_t dot = hostname.find('.', start);
      const std::string label = hostname.substr(start, dot - start);
      if (label.empty() || label.size() > 63) {
        why = "each dot-separated label must be 1 to 63 characters";
      } else if (label.front() == '-' || label.back() == '-') {
        why = "labels must not start or end with '-'";
      } else if (!std::all_of(label.begin(), label.end(), [](char c) {
                   return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
                 })) {
        why = "may contain only letters, digits, '-' and '.'";
      }
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  if (!why.empty()) p.Add("hostname", why, Quote(hostname));
}

void CheckIdentity(ValidationProblems& p, const JailSpec& spec) {
  const std::pair<const char*, uint32_t> ids[] = {{"user.uid", spec.uid}, {"user.gid", spec.gid}};
  for (const auto& [field, id] : ids) {
    if (id == static_cast<uint32_t>(-1)) {
      p.Add(field, "4294967295 is (uid_t)-1, which the kernel reads as \"unchanged\"",
            std::to_string(id));
    } else if (id == 0 && !spec.unsafe.allow_root) {
      p.Add(field, "0 (root) needs unsafe.allow_root: true", "0");
    }
  }
}

void CheckSeccomp(ValidationProblems& p, const JailSpec& spec) {
  const std::string& profile = spec.seccomp_profile;
  const char* field = "seccomp.profile";
  if (RefusedNul(p, field, profile)) return;
  if (profile == "unconfined") {
    if (!spec.unsafe.allow_unconfined_seccomp) {
      p.Add(field, "unconfined needs unsafe.allow_unconfined_seccomp: true", Quote(profile));
    }
    return;
  }
  const std::vector<std::string> builtins = jail::BuiltinSeccompProfileNames();
  if (std::find(builtins.begin(), builtins.end(), profile) != builtins.end()) return;
  if (!profile.empty() && profile[0] == '/') {
    CheckHostPath(p, field, profile, HostKind::kRegularFile);
    return;
  }
  std::string names;
  for (const std::string& name : builtins) names += name + ", ";
  p.Add(field, "must be one of " + names + "unconfined, or an absolute path to a JSON profile",
        Quote(profile));
}

// network.mode, and namespaces.net, which says the same as mode host: the loader and the
// flags set both, so a spec where they differ was put together some other way. (The
// mode's value itself was checked where it was read: runtime/spec/modes.h.)
void CheckNetworkMode(ValidationProblems& p, const JailSpec& spec) {
  const NetworkMode mode = spec.network.mode;
  const std::string shown = Quote(std::string(Name(mode)));
  const bool host = mode == NetworkMode::kHost;
  if (host && !spec.unsafe.host_network) {
    p.Add("network.mode",
          "host (the host's network, namespaces.net: false) needs unsafe.host_network: true",
          shown);
  } else if (!spec.namespaces.net && !spec.unsafe.host_network) {
    p.Add("namespaces.net", "false (the host's network) needs unsafe.host_network: true", "false");
  }
  if (host && spec.namespaces.net) {
    p.Add("network.mode", "host (no network namespace) contradicts namespaces.net: true", shown);
  } else if (!host && !spec.namespaces.net) {
    p.Add("namespaces.net",
          "false (no network namespace) contradicts network.mode: " + std::string(Name(mode)) +
              "; the host's network is network.mode: host",
          "false");
  }
  if (mode == NetworkMode::kAllowlist && spec.network.allow.empty()) {
    p.AddLine("network.allow: empty; nothing would be reachable - use mode none");
  }
}

// Each rule is parsed by the grammar the proxy's policy uses (runtime/net/rules.h), in
// every mode: a typo is reported before anyone switches to allowlist. Rule by rule, so
// that every bad one is reported. (The policy itself is built from these same rules by
// ParseRule alone, so a spec that passes here also builds a policy.)
void CheckNetworkRules(ValidationProblems& p, const NetworkSpec& network) {
  for (const auto& [list, name] :
       {std::pair{&network.allow, "network.allow"}, std::pair{&network.deny, "network.deny"}}) {
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string field = std::string(name) + "[" + std::to_string(i) + "]";
      if (RefusedNul(p, field, (*list)[i])) continue;
      if (Result<net::Rule> rule = net::ParseRule((*list)[i]); !rule) {
        p.AddLine(field + ": " + rule.error().message());
      }
    }
  }
}

void CheckNetworkLimits(ValidationProblems& p, const NetworkSpec& network) {
  if (network.max_connections < 1 || network.max_connections > 10000) {
    p.Add("network.max_connections", "must be 1 to 10000", std::to_string(network.max_connections));
  }
  if (network.max_bytes && *network.max_bytes <= 0) {
    p.Add("network.max_bytes", "must be greater than 0 (leave it unset for no cap)",
          std::to_string(*network.max_bytes));
  }
}

// Test fixtures' name -> address overrides: a name the resolver can answer, an IP address.
void CheckNetworkResolve(ValidationProblems& p, const UnsafeSpec& unsafe) {
  const std::string section = "unsafe.network_resolve";
  for (const auto& [name, address] : unsafe.network_resolve) {
    if (name.empty() || RefusedNul(p, section, name)) {
      if (name.empty()) p.Add(section, "a name must not be empty", "\"\"");
      continue;
    }
    const std::string field = section + "." + name;
    if (RefusedNul(p, field, address)) continue;
    if (net::NormalizeHost(name).empty()) {
      p.Add(field, "is not a host name", Quote(name));
    }
    if (!net::IpAddress::Parse(address)) {
      p.Add(field, "must be an IPv4 or IPv6 address", Quote(address));
    }
  }
}

void CheckLimits(ValidationProblems& p, const LimitsSpec& l) {
  auto at_least = [&p](const char* field, int64_t value, int64_t min, const std::string& shown,
                       const std::string& min_shown) {
    if (value < min) p.Add(field, "must be at least " + min_shown, shown);
  };
  at_least("limits.memory", l.memory_bytes, 4 * kMiB, std::to_string(l.memory_bytes), "4 MiB");
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (!(l.cpus > 0) || !std::isfinite(l.cpus)) {
    p.Add("limits.cpus", "must be greater than 0", FormatNumber(l.cpus));
  } else if (online > 0 && l.cpus > static_cast<double>(online)) {
    p.Add("limits.cpus", "must be at most the " + std::to_string(online) + " online CPUs",
          FormatNumber(l.cpus));
  }
  at_least("limits.pids", l.pids, 2, std::to_string(l.pids),
           "2, for corral's init and the command");
  CheckTimeoutAndOutput(p, l);
  if (l.cpu_time_seconds) {
    at_least("limits.cpu_time", *l.cpu_time_seconds, 1, std::to_string(*l.cpu_time_seconds),
             "1 second");
  }
  at_least("limits.tmp_size", l.tmp_size_bytes, kMiB, std::to_string(l.tmp_size_bytes), "1 MiB");
  at_least("limits.file_size", l.file_size_bytes, 1, std::to_string(l.file_size_bytes), "1 byte");
  at_least("limits.open_files", l.open_files, 16, std::to_string(l.open_files), "16");
  // RLIMIT_NOFILE above fs.nr_open fails with EPERM even for root.
  if (Result<long long> nr_open = ReadInt("/proc/sys/fs/nr_open");
      nr_open && l.open_files > *nr_open) {
    p.Add("limits.open_files", "must be at most fs.nr_open = " + std::to_string(*nr_open),
          std::to_string(l.open_files));
  }
  if (!(l.kill_grace_seconds >= 0) || !std::isfinite(l.kill_grace_seconds)) {
    p.Add("limits.kill_grace", "must be 0 or more seconds", FormatNumber(l.kill_grace_seconds));
  }
}

void CheckLandlock(ValidationProblems& p, const JailSpec& spec) {
  const LandlockSpec& l = spec.landlock;
  for (size_t i = 0; i < l.omit.size(); ++i) {
    const std::string field = "landlock.omit[" + std::to_string(i) + "]";
    if (RefusedNul(p, field, l.omit[i])) continue;
    const bool is_mount =
        std::any_of(spec.mounts.begin(), spec.mounts.end(),
                    [&](const MountSpec& m) { return m.container_path == l.omit[i]; });
    if (!is_mount) p.Add(field, "is not the container_path of any of mounts", Quote(l.omit[i]));
  }
}

bool IsCgroupName(const std::string& part) {
  return !part.empty() && part != "." && part != ".." &&
         std::all_of(part.begin(), part.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
         });
}

void CheckCgroups(ValidationProblems& p, const CgroupSpec& cg) {
  if (RefusedNul(p, "cgroups.parent", cg.parent)) return;
  const bool absolute = !cg.parent.empty() && cg.parent[0] == '/';
  bool ok = !cg.parent.empty() && cg.parent != "/";
  // Both forms are [A-Za-z0-9_.-] components; an absolute one starts from each
  // hierarchy's root instead of corral's own cgroup.
  for (size_t start = absolute ? 1 : 0; ok;) {
    const size_t slash = cg.parent.find('/', start);
    ok = IsCgroupName(cg.parent.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (!ok) {
    p.Add("cgroups.parent",
          "must be a path of [A-Za-z0-9_.-] components (relative, or absolute from the "
          "hierarchy root), without empty, \".\" or \"..\" components",
          Quote(cg.parent));
  }
}

}  // namespace

Status RequireProcessMode(const JailSpec& spec, const std::string& what) {
  if (spec.mode == RunMode::kProcess) return Ok();
  return Error(ErrorCode::kUnsupported,
               "mode: " + std::string(Name(spec.mode)) + " is not available for " + what +
                   " (only `corral run` and `corral code run` without --sandbox run mode "
                   "container); use mode process here");
}

std::vector<std::string> ValidateMounts(const std::vector<MountSpec>& mounts) {
  ValidationProblems p;
  CheckMounts(p, mounts);
  return p.Take();
}

std::vector<std::string> Validate(const JailSpec& spec) {
  ValidationProblems p;
  CheckArgv(p, spec.argv);
  CheckEnv(p, spec.env);
  CheckDirs(p, spec);
  CheckMounts(p, spec.mounts);
  CheckHostname(p, spec.hostname);
  CheckIdentity(p, spec);
  CheckNetworkMode(p, spec);
  CheckNetworkRules(p, spec.network);
  CheckNetworkLimits(p, spec.network);
  CheckNetworkResolve(p, spec.unsafe);
  CheckSeccomp(p, spec);
  CheckLimits(p, spec.limits);
  CheckCgroups(p, spec.cgroups);
  CheckLandlock(p, spec);
  return p.Take();
}

std::vector<std::string> ValidateLateFields(const JailSpec& spec) {
  ValidationProblems p;
  CheckArgv(p, spec.argv);
  CheckEnv(p, spec.env);
  CheckWorkdir(p, spec.workdir);
  CheckTimeoutAndOutput(p, spec.limits);
  return p.Take();
}

namespace {

Status AsStatus(const std::vector<std::string>& problems) {
  if (problems.empty()) return Ok();
  std::string text = "invalid configuration:";
  for (const auto& p : problems) text += "\n  " + p;
  return Error(ErrorCode::kInvalidArgument, text);
}

}  // namespace

Status ValidateSpec(const JailSpec& spec) { return AsStatus(Validate(spec)); }

Status ValidateMountsSpec(const std::vector<MountSpec>& mounts) {
  return AsStatus(ValidateMounts(mounts));
}

Status ValidateLateFieldsSpec(const JailSpec& spec) { return AsStatus(ValidateLateFields(spec)); }

}  // namespace corral::runtime
