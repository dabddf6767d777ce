#include "runtime/oci/oci_bundle.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include "jail/plan.h"
#include "runtime/oci/oci_seccomp.h"
#include "runtime/run/planner.h"
#include "runtime/run/root_layout.h"

namespace corral::runtime::oci {

namespace {

using jail::MountOp;
using nlohmann::json;

bool Under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

std::vector<std::string> SplitOptions(const std::string& data) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < data.size()) {
    size_t end = data.find(',', start);
    if (end == std::string::npos) end = data.size();
    if (end > start) out.push_back(data.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void AddFlagOptions(unsigned long flags, json* options) {
  if (flags & MS_NOSUID) options->push_back("nosuid");
  if (flags & MS_NODEV) options->push_back("nodev");
  if (flags & MS_NOEXEC) options->push_back("noexec");
}

Status WriteAll(const std::string& path, const std::string& content, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return Error::FromErrno(errno, "bundle rootfs: create " + path);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      return Error::FromErrno(err, "bundle rootfs: write " + path);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::chmod(path.c_str(), mode) != 0) return Error::FromErrno(errno, "chmod " + path);
  return Ok();
}

// The root layout's ops, translated (see oci_bundle.h).
class Translator {
 public:
  explicit Translator(std::string rootfs) : rootfs_(std::move(rootfs)) {}

  Status Add(const MountOp& op) {
    const std::string& path = op.path;
    switch (op.kind) {
      case MountOp::Kind::kTmpfs:
        if (path.empty()) return Ok();  // the root itself: rootfs/, read-only
        if (Under(path, "/proc")) {
          masked_.push_back(path);  // an empty read-only directory, as the runtime makes it
          return Ok();
        }
        return Mount(path, "tmpfs", "tmpfs", SplitOptions(op.data), op.flags, op.read_only);
      case MountOp::Kind::kInnerBind:
        if (Under(path, "/proc")) {
          masked_.push_back(path);  // an empty read-only directory, as the runtime makes it
          return Ok();
        }
        // An area of process mode's one tmpfs: a tmpfs of its own here.
        return Mount(path, "tmpfs", "tmpfs", SplitOptions(op.data), op.flags, op.read_only);
      case MountOp::Kind::kRmdir:  // the masks' source, made by the kMkdir before
        if (::rmdir((rootfs_ + path).c_str()) != 0 && errno != ENOENT) {
          return Error::FromErrno(errno, "bundle rootfs: rmdir " + path);
        }
        return Ok();
      case MountOp::Kind::kProc:
        return Mount(path, "proc", "proc", {}, op.flags, false);
      case MountOp::Kind::kDevpts:
        return Mount(path, "devpts", "devpts", SplitOptions(op.data), op.flags, false);
      case MountOp::Kind::kBind:
        return Bind(op);
      case MountOp::Kind::kReadOnly:
      case MountOp::Kind::kRemountReadOnly:
        readonly_.push_back(path);
        return Ok();
      case MountOp::Kind::kDevice:
        return Ok();  // the runtime's default devices (only planned outside a user ns)
      case MountOp::Kind::kMkdir:
        if (CoveredByMount(path)) return Ok();  // the runtime makes mount points itself
        if (::mkdir((rootfs_ + path).c_str(), op.mode) != 0 && errno != EEXIST) {
          return Error::FromErrno(errno, "bundle rootfs: mkdir " + path);
        }
        ::chmod((rootfs_ + path).c_str(), op.mode);
        return Ok();
      case MountOp::Kind::kFile:
        if (CoveredByMount(path)) return Unexpressible(op);
        return WriteAll(rootfs_ + path, op.data, op.mode);
      case MountOp::Kind::kSymlink:
        if (Under(path, "/dev")) return Ok();  // fd, stdin, stdout, stderr, ptmx: runtime's
        if (CoveredByMount(path)) return Unexpressible(op);
        if (::symlink(op.data.c_str(), (rootfs_ + path).c_str()) != 0) {
          return Error::FromErrno(errno, "bundle rootfs: symlink " + path);
        }
        return Ok();
      case MountOp::Kind::kFilesystem:  // planned for corral-runc's containers only
      case MountOp::Kind::kMask:
        return Unexpressible(op);
    }
    return Unexpressible(op);
  }

  // corral-init, bound read-only over an empty file of the (read-only) rootfs.
  Status AddInit(const std::string& host_path) {
    const std::string dir =
        std::string(kContainerInitPath).substr(0, std::string(kContainerInitPath).rfind('/'));
    if (::mkdir((rootfs_ + dir).c_str(), 0755) != 0 && errno != EEXIST) {
      return Error::FromErrno(errno, "bundle rootfs: mkdir " + dir);
    }
    RETURN_IF_ERROR(WriteAll(rootfs_ + kContainerInitPath, "", 0555));
    mounts.push_back({{"destination", kContainerInitPath},
                      {"type", "bind"},
                      {"source", host_path},
                      {"options", {"bind", "ro", "nosuid", "nodev"}}});
    destinations_.push_back(kContainerInitPath);
    return Ok();
  }

  json mounts = json::array();
  std::vector<std::string> masked_;
  std::vector<std::string> readonly_;

 private:
  bool CoveredByMount(const std::string& path) const {
    for (const auto& d : destinations_) {
      if (Under(path, d)) return true;
    }
    return false;
  }

  static Status Unexpressible(const MountOp& op) {
    return Error(ErrorCode::kUnsupported,
                 "mode container: cannot express \"" + op.description + "\" in an OCI bundle");
  }

  Status Mount(const std::string& path, const char* type, const char* source,
               const std::vector<std::string>& data, unsigned long flags, bool read_only) {
    json options = json::array();
    AddFlagOptions(flags, &options);
    for (const auto& o : data) options.push_back(o);
    if (read_only) options.push_back("ro");
    mounts.push_back(
        {{"destination", path}, {"type", type}, {"source", source}, {"options", options}});
    destinations_.push_back(path);
    return Ok();
  }

  Status Bind(const MountOp& op) {
    const std::string& path = op.path;
    if (op.source_path.empty()) {
      return Error(ErrorCode::kInternal,
                   "mode container: bind without a source path: " + op.description);
    }
    if (Under(path, "/proc")) {
      masked_.push_back(path);  // a /dev/null mask: the runtime binds /dev/null there too
      return Ok();
    }
    if (Under(path, "/dev") && !op.source_is_dir) return Ok();  // a device node: runtime's
    json options = json::array({"rbind", "rprivate"});
    if (op.source_attrs & MOUNT_ATTR_NOSUID) options.push_back("nosuid");
    if (op.source_attrs & MOUNT_ATTR_NODEV) options.push_back("nodev");
    if (op.source_attrs & MOUNT_ATTR_NOEXEC) options.push_back("noexec");
    // "ro" alone makes only the top mount read-only; "rro" (mount_setattr AT_RECURSIVE)
    // covers what is mounted beneath it on the host, as process mode's bind does.
    if (op.source_attrs & MOUNT_ATTR_RDONLY) {
      options.push_back("ro");
      options.push_back("rro");
    }
    mounts.push_back({{"destination", path},
                      {"type", "bind"},
                      {"source", op.source_path},
                      {"options", options}});
    destinations_.push_back(path);
    return Ok();
  }

  std::string rootfs_;
  std::vector<std::string> destinations_;
};

const char* RlimitName(int resource) {
  switch (resource) {
    case RLIMIT_FSIZE:
      return "RLIMIT_FSIZE";
    case RLIMIT_NOFILE:
      return "RLIMIT_NOFILE";
    case RLIMIT_CORE:
      return "RLIMIT_CORE";
    case RLIMIT_CPU:
      return "RLIMIT_CPU";
    case RLIMIT_NPROC:
      return "RLIMIT_NPROC";
    case RLIMIT_AS:
      return "RLIMIT_AS";
  }
  return nullptr;
}

// The process the runtime starts: corral-init, which runs the command (see oci_bundle.h).
std::vector<std::string> InitArgs(const std::vector<std::string>& command) {
  std::vector<std::string> args = {kContainerInitPath, "-r", std::to_string(kContainerReportFd),
                                   "--"};
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

json Namespaces(const NamespaceSpec& ns) {
  json out = json::array({{{"type", "mount"}}});
  if (ns.pid) out.push_back({{"type", "pid"}});
  if (ns.uts) out.push_back({{"type", "uts"}});
  if (ns.ipc) out.push_back({{"type", "ipc"}});
  if (ns.net) out.push_back({{"type", "network"}});
  if (ns.cgroup) out.push_back({{"type", "cgroup"}});
  return out;
}

json Resources(const LimitsSpec& l) {
  constexpr int64_t kPeriod = 100000;
  return {
      // swap == limit: memory+swap may not exceed memory, i.e. no swap (v1 memsw, v2 swap.max
      // = swap - limit = 0), as process mode.
      {"memory", {{"limit", l.memory_bytes}, {"swap", l.memory_bytes}}},
      {"pids", {{"limit", l.pids}}},
      {"cpu",
       {{"quota", static_cast<int64_t>(std::llround(l.cpus * kPeriod))}, {"period", kPeriod}}},
  };
}

}  // namespace

Status CheckContainerSpec(const JailSpec& spec) {
  if (spec.rootless) {
    return Error(ErrorCode::kUnsupported,
                 "mode container: rootless is not supported (corral runs the OCI runtime as "
                 "root); use mode process for a rootless jail");
  }
  if (spec.network.mode == NetworkMode::kAllowlist) {
    return Error(ErrorCode::kUnsupported,
                 "mode container: network.mode allowlist is not supported (corral's proxy "
                 "lives in a network namespace corral makes); use none or mode process");
  }
  if (spec.landlock.enabled == LandlockMode::kOn) {
    return Error(ErrorCode::kUnsupported,
                 "mode container: landlock.enabled true cannot be honoured (an OCI runtime "
                 "applies no Landlock ruleset); set auto or false, or use mode process");
  }
  if (::geteuid() != 0) {
    return Error(ErrorCode::kPermissionDenied,
                 "mode container: needs root (corral runs crun/runc as root)");
  }
  for (const MountSpec& m : spec.mounts) {
    if (m.volume.empty()) continue;
    // A volume's mount is an id-mapped tree or an image's, made by corral's planner;
    // an OCI bundle names host paths only.
    return Error(ErrorCode::kUnsupported, "mode container: volume " + m.volume + " at " +
                                              m.container_path +
                                              ": volumes are mounted in mode process only");
  }
  return Ok();
}

Result<json> OciConfig(const JailSpec& spec, const std::string& rootfs_dir,
                       const std::string& cgroups_path, const std::string& init_program) {
  // The root layout as a rootless jail would plan it: every bind named by host path.
  jail::JailPlan layout;
  layout.staging_dir = "";
  layout.user_ns.enabled = true;
  RETURN_IF_ERROR(AddRootLayout(spec, &layout));
  Translator t(rootfs_dir);
  for (const MountOp& op : layout.mounts) RETURN_IF_ERROR(t.Add(op));
  RETURN_IF_ERROR(t.AddInit(init_program));

  // The command's identity, rlimits, argv, env and cwd, exactly as process mode plans them.
  ASSIGN_OR_RETURN(jail::JailPlan command, PlanExec(spec));
  json rlimits = json::array();
  for (const auto& [resource, limit] : command.rlimits) {
    const char* name = RlimitName(resource);
    if (name == nullptr) continue;
    rlimits.push_back({{"type", name}, {"soft", limit.rlim_cur}, {"hard", limit.rlim_max}});
  }
  const json no_caps = json::array();
  json process = {
      {"terminal", false},
      {"user", {{"uid", spec.uid}, {"gid", spec.gid}, {"additionalGids", json::array()}}},
      {"args", InitArgs(command.argv_storage)},
      {"env", command.envp_storage},
      {"cwd", command.workdir},
      {"noNewPrivileges", true},
      {"capabilities",
       {{"bounding", no_caps},
        {"effective", no_caps},
        {"permitted", no_caps},
        {"inheritable", no_caps},
        {"ambient", no_caps}}},
      {"rlimits", rlimits},
  };
  json linux_section = {
      {"namespaces", Namespaces(spec.namespaces)},
      {"cgroupsPath", cgroups_path},
      {"resources", Resources(spec.limits)},
      {"maskedPaths", t.masked_},
      {"readonlyPaths", t.readonly_},
  };
  ASSIGN_OR_RETURN(json seccomp, OciSeccomp(spec.seccomp_profile));
  if (!seccomp.is_null()) linux_section["seccomp"] = std::move(seccomp);
  json config = {
      {"ociVersion", "1.0.2"},
      {"process", std::move(process)},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"mounts", std::move(t.mounts)},
      {"linux", std::move(linux_section)},
  };
  if (spec.namespaces.uts) config["hostname"] = spec.hostname;
  return config;
}

Status WriteBundle(const JailSpec& spec, const std::string& bundle_dir,
                   const std::string& cgroups_path, const std::string& init_program) {
  const std::string rootfs = bundle_dir + "/rootfs";
  // 0755: it becomes the container's "/", which uid 1000 must be able to search.
  if (::mkdir(rootfs.c_str(), 0755) != 0) return Error::FromErrno(errno, "mkdir " + rootfs);
  if (::chmod(rootfs.c_str(), 0755) != 0) return Error::FromErrno(errno, "chmod " + rootfs);
  ASSIGN_OR_RETURN(json config, OciConfig(spec, rootfs, cgroups_path, init_program));
  return WriteAll(bundle_dir + "/config.json", config.dump(1), 0600);
}

std::string MinimalOciConfigJson(const std::string& rootfs, const std::vector<std::string>& args) {
  json ns = json::array();
  for (const char* t : {"pid", "network", "ipc", "uts", "mount"}) ns.push_back({{"type", t}});
  json mounts = json::array({
      {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
      {{"destination", "/dev"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
      {{"destination", "/tmp"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "nodev", "size=65536k"}}},
  });
  json config = {
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", 0}, {"gid", 0}}},
        {"args", args},
        {"env", {"PATH=/bin"}},
        {"cwd", "/"},
        {"noNewPrivileges", true},
        {"capabilities",
         {{"bounding", json::array()},
          {"effective", json::array()},
          {"permitted", json::array()}}}}},
      {"root", {{"path", rootfs}, {"readonly", true}}},
      {"hostname", "sandbox"},
      {"mounts", mounts},
      {"linux", {{"namespaces", ns}, {"maskedPaths", {"/proc/kcore"}}}},
  };
  return config.dump(1);
}

}  // namespace corral::runtime::oci
