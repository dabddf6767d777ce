#include "runtime/oci/runc_plan.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <map>

#include "jail/mounts.h"
#include "jail/seccomp.h"
#include "jail/seccomp_builtins.h"

namespace corral::runtime::oci {

namespace {

using jail::MountOp;

// "/dev/pts" -> "dev/pts": in-root ops take paths relative to the root.
std::string RootRelative(const std::string& destination) {
  size_t start = destination.find_first_not_of('/');
  return start == std::string::npos ? "." : destination.substr(start);
}

Status PlanNamespaces(const BundleConfig& config, ContainerPlan* plan) {
  jail::JailPlan& jail = plan->jail;
  jail.clone_flags = CLONE_NEWNS;
  if (config.FindNamespace("mount") == nullptr) {
    return ConfigFieldError("linux.namespaces", "corral-runc needs a mount namespace (type mount)");
  }
  for (size_t i = 0; i < config.namespaces.size(); ++i) {
    const OciNamespace& ns = config.namespaces[i];
    const std::string where = "linux.namespaces[" + std::to_string(i) + "]";
    const int flag = NamespaceCloneFlag(ns.type);
    if (ns.type == "user" || ns.type == "time") {
      return ConfigFieldError(where, "a " + ns.type + " namespace is not supported by corral-runc");
    }
    if (ns.path.empty()) {
      if (flag == CLONE_NEWCGROUP) {
        jail.new_cgroup_ns = true;
      } else {
        jail.clone_flags |= static_cast<unsigned long>(flag);
      }
      continue;
    }
    if (flag == CLONE_NEWNS) {
      return ConfigFieldError(where + ".path", "joining a mount namespace is not supported");
    }
    UniqueFd fd(::open(ns.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return Error::FromErrno(errno, "config.json: " + where + ".path: open " + ns.path);
    if (flag == CLONE_NEWPID) {
      plan->pid_namespace = std::move(fd);
    } else {
      jail.join_namespaces.emplace_back(fd.get(), flag);
      plan->namespace_fds.push_back(std::move(fd));
    }
  }
  return Ok();
}

struct MountFlagWord {
  const char* word;
  uint64_t attr;  // MOUNT_ATTR_* for binds
  unsigned long flag;
  bool set;
};
constexpr MountFlagWord kMountFlagWords[] = {
    {"ro", MOUNT_ATTR_RDONLY, MS_RDONLY, true},
    {"rw", MOUNT_ATTR_RDONLY, MS_RDONLY, false},
    {"nosuid", MOUNT_ATTR_NOSUID, MS_NOSUID, true},
    {"suid", MOUNT_ATTR_NOSUID, MS_NOSUID, false},
    {"nodev", MOUNT_ATTR_NODEV, MS_NODEV, true},
    {"dev", MOUNT_ATTR_NODEV, MS_NODEV, false},
    {"noexec", MOUNT_ATTR_NOEXEC, MS_NOEXEC, true},
    {"exec", MOUNT_ATTR_NOEXEC, MS_NOEXEC, false},
    {"noatime", MOUNT_ATTR_NOATIME, MS_NOATIME, true},
    {"nodiratime", MOUNT_ATTR_NODIRATIME, MS_NODIRATIME, true},
    {"relatime", MOUNT_ATTR_RELATIME, MS_RELATIME, true},
    {"strictatime", MOUNT_ATTR_STRICTATIME, MS_STRICTATIME, true},
    {"nosymfollow", MOUNT_ATTR_NOSYMFOLLOW, 0, true},
};

struct MountOptions {
  bool bind = false;
  bool recursive = false;
  uint64_t attr_set = 0;
  uint64_t attr_clear = 0;
  unsigned long flags = 0;
  bool read_only = false;
  std::string data;  // filesystem options: "mode=755,size=65536k"
};

Result<MountOptions> ParseMountOptions(const OciMount& mount, const std::string& where) {
  MountOptions out;
  out.bind = mount.type == "bind";
  for (size_t i = 0; i < mount.options.size(); ++i) {
    const std::string& word = mount.options[i];
    if (word == "bind" || word == "rbind") {
      out.bind = true;
      out.recursive = out.recursive || word == "rbind";
      continue;
    }
    // Every mount is private already (the namespace is made private first).
    if (word == "private" || word == "rprivate") continue;
    if (word == "shared" || word == "rshared" || word == "slave" || word == "rslave" ||
        word == "unbindable" || word == "runbindable") {
      return ConfigFieldError(where + ".options[" + std::to_string(i) + "]",
                              "mount propagation \"" + word + "\" is not supported by corral-runc");
    }
    const MountFlagWord* known = nullptr;
    for (const MountFlagWord& flag_word : kMountFlagWords) {
      if (word == flag_word.word) known = &flag_word;
    }
    if (known == nullptr) {
      if (word.find('=') == std::string::npos && word != "newinstance") {
        return ConfigFieldError(where + ".options[" + std::to_string(i) + "]",
                                "unknown mount option \"" + word + "\"");
      }
      out.data += (out.data.empty() ? "" : ",") + word;
      continue;
    }
    (known->set ? out.attr_set : out.attr_clear) |= known->attr;
    (known->set ? out.attr_clear : out.attr_set) &= ~known->attr;
    if (known->flag == MS_RDONLY) {
      out.read_only = known->set;
    } else if (known->set) {
      out.flags |= known->flag;
    } else {
      out.flags &= ~known->flag;
    }
  }
  return out;
}

Status AddBindMount(const BundleConfig& config, const OciMount& mount, const MountOptions& options,
                    const std::string& where, ContainerPlan* plan) {
  if (!options.data.empty()) {
    return ConfigFieldError(where + ".options",
                            "a bind takes no filesystem options (" + options.data + ")");
  }
  std::string source = mount.source;
  if (source.empty()) return ConfigFieldError(where + ".source", "a bind needs a source");
  if (source.front() != '/') source = config.bundle_dir + "/" + source;
  struct stat st;
  if (::stat(source.c_str(), &st) != 0) {
    return Error::FromErrno(errno, "config.json: " + where + ".source: " + source);
  }
  ASSIGN_OR_RETURN(UniqueFd tree,
                   jail::PrepareBindTreeWithAttrs(source, options.recursive, options.attr_set,
                                                  options.attr_clear));
  MountOp op;
  op.kind = MountOp::Kind::kBind;
  op.in_root = true;
  op.path = RootRelative(mount.destination);
  op.source_is_dir = S_ISDIR(st.st_mode);
  op.source_fd = tree.get();
  op.description = "bind-mount " + source + " -> " + mount.destination;
  plan->jail.source_fds.push_back(std::move(tree));
  plan->jail.mounts.push_back(std::move(op));
  return Ok();
}

// A "cgroup" mount: cgroup2 on a v2 host (the container's cgroup namespace shows its own
// subtree). On a v1 host, a tmpfs holding a read-only bind of the container's own
// directory of each controller, as runc makes it.
Status AddCgroupMount(const OciMount& mount, const MountOptions& options,
                      const ContainerPlanOptions& host, ContainerPlan* plan) {
  MountOp op;
  op.in_root = true;
  op.path = RootRelative(mount.destination);
  op.description = "mount cgroup at " + mount.destination;
  if (host.cgroup_v2) {
    op.kind = MountOp::Kind::kFilesystem;
    op.fstype = "cgroup2";
    op.flags = options.flags;
    op.read_only = options.read_only;
    plan->jail.mounts.push_back(std::move(op));
    return Ok();
  }
  op.kind = MountOp::Kind::kTmpfs;
  op.flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  op.data = "mode=755";
  plan->jail.mounts.push_back(op);
  for (const auto& [controller, dir] : host.v1_cgroup_dirs) {
    ASSIGN_OR_RETURN(
        UniqueFd tree,
        jail::PrepareBindTreeWithAttrs(
            dir, false,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0));
    MountOp bind;
    bind.kind = MountOp::Kind::kBind;
    bind.in_root = true;
    bind.path = op.path + "/" + controller;
    bind.source_fd = tree.get();
    bind.description = "bind-mount " + dir + " -> " + mount.destination + "/" + controller;
    plan->jail.source_fds.push_back(std::move(tree));
    plan->jail.mounts.push_back(std::move(bind));
  }
  if (options.read_only) {
    MountOp ro;
    ro.kind = MountOp::Kind::kRemountReadOnly;
    ro.in_root = true;
    ro.path = op.path;
    ro.description = "make " + mount.destination + " read-only";
    plan->jail.mounts.push_back(std::move(ro));
  }
  return Ok();
}

Status PlanMounts(const BundleConfig& config, const ContainerPlanOptions& host,
                  ContainerPlan* plan) {
  for (size_t i = 0; i < config.mounts.size(); ++i) {
    const OciMount& mount = config.mounts[i];
    const std::string where = "mounts[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(MountOptions options, ParseMountOptions(mount, where));
    if (options.bind) {
      RETURN_IF_ERROR(AddBindMount(config, mount, options, where, plan));
      continue;
    }
    if (mount.type == "cgroup" || mount.type == "cgroup2") {
      RETURN_IF_ERROR(AddCgroupMount(mount, options, host, plan));
      continue;
    }
    static const std::vector<std::string> kFilesystems = {"tmpfs", "proc",   "devpts",
                                                          "sysfs", "mqueue", "shm"};
    if (std::find(kFilesystems.begin(), kFilesystems.end(), mount.type) == kFilesystems.end()) {
      return ConfigFieldError(where + ".type",
                              "filesystem \"" + mount.type + "\" is not supported by corral-runc");
    }
    if ((options.attr_set & MOUNT_ATTR_NOSYMFOLLOW) != 0) {
      return ConfigFieldError(where + ".options", "nosymfollow applies to binds only");
    }
    MountOp op;
    op.kind = MountOp::Kind::kFilesystem;
    op.fstype = mount.type == "shm" ? "tmpfs" : mount.type;
    op.source_path = mount.source.empty() ? op.fstype : mount.source;
    op.in_root = true;
    op.path = RootRelative(mount.destination);
    op.flags = options.flags;
    op.read_only = options.read_only;
    op.data = options.data;
    op.description = "mount " + mount.type + " at " + mount.destination;
    plan->jail.mounts.push_back(std::move(op));
  }
  return Ok();
}

void AddDeviceNode(const OciDevice& device, std::vector<MountOp>* mounts) {
  MountOp op;
  op.kind = MountOp::Kind::kDevice;
  op.in_root = true;
  op.path = RootRelative(device.path);
  op.file_type = device.type == 'b' ? S_IFBLK : device.type == 'p' ? S_IFIFO : S_IFCHR;
  op.mode = device.file_mode.value_or(0666) & 07777;
  op.device = makedev(static_cast<unsigned>(device.major), static_cast<unsigned>(device.minor));
  op.owner_uid = device.uid.value_or(0);
  op.owner_gid = device.gid.value_or(0);
  op.description = "make device " + device.path;
  mounts->push_back(std::move(op));
}

void PlanDevices(const BundleConfig& config, ContainerPlan* plan) {
  // runc's default set, unless the config names the same path.
  const OciDevice defaults[] = {
      {"/dev/null", 'c', 1, 3, 0666, 0, 0},    {"/dev/zero", 'c', 1, 5, 0666, 0, 0},
      {"/dev/full", 'c', 1, 7, 0666, 0, 0},    {"/dev/random", 'c', 1, 8, 0666, 0, 0},
      {"/dev/urandom", 'c', 1, 9, 0666, 0, 0}, {"/dev/tty", 'c', 5, 0, 0666, 0, 0}};
  auto& mounts = plan->jail.mounts;
  for (const OciDevice& device : defaults) {
    bool named = std::any_of(config.devices.begin(), config.devices.end(),
                             [&](const OciDevice& d) { return d.path == device.path; });
    if (!named) AddDeviceNode(device, &mounts);
  }
  for (const OciDevice& device : config.devices) AddDeviceNode(device, &mounts);
  const std::pair<const char*, const char*> links[] = {{"dev/fd", "/proc/self/fd"},
                                                       {"dev/stdin", "/proc/self/fd/0"},
                                                       {"dev/stdout", "/proc/self/fd/1"},
                                                       {"dev/stderr", "/proc/self/fd/2"},
                                                       {"dev/ptmx", "pts/ptmx"}};
  for (const auto& [path, target] : links) {
    MountOp op;
    op.kind = MountOp::Kind::kSymlink;
    op.in_root = true;
    op.path = path;
    op.data = target;
    op.description = std::string("symlink /") + path;
    mounts.push_back(std::move(op));
  }
}

Status PlanMasks(const BundleConfig& config, ContainerPlan* plan) {
  const auto& masked = config.masked_paths.empty() ? kDefaultMaskedPaths : config.masked_paths;
  const auto& readonly =
      config.readonly_paths.empty() ? kDefaultReadonlyPaths : config.readonly_paths;
  if (config.masked_paths.empty()) plan->notes.push_back("linux.maskedPaths: corral's list");
  if (config.readonly_paths.empty()) plan->notes.push_back("linux.readonlyPaths: corral's list");
  for (const std::string& path : readonly) {
    MountOp op;
    op.kind = MountOp::Kind::kReadOnly;
    op.in_root = true;
    op.path = RootRelative(path);
    op.description = "make " + path + " read-only";
    plan->jail.mounts.push_back(std::move(op));
  }
  for (const std::string& path : masked) {
    ASSIGN_OR_RETURN(UniqueFd null_tree, jail::PrepareNullMaskTree());
    MountOp op;
    op.kind = MountOp::Kind::kMask;
    op.in_root = true;
    op.path = RootRelative(path);
    op.source_fd = null_tree.get();
    op.description = "mask " + path;
    plan->jail.source_fds.push_back(std::move(null_tree));
    plan->jail.mounts.push_back(std::move(op));
  }
  return Ok();
}

}  // namespace

int NamespaceCloneFlag(const std::string& type) {
  static constexpr std::pair<const char*, int> kKinds[] = {
      {"pid", CLONE_NEWPID},   {"network", CLONE_NEWNET},
      {"mount", CLONE_NEWNS},  {"ipc", CLONE_NEWIPC},
      {"uts", CLONE_NEWUTS},   {"cgroup", CLONE_NEWCGROUP},
      {"user", CLONE_NEWUSER}, {"time", 0x80 /* CLONE_NEWTIME */}};
  for (const auto& [name, flag] : kKinds) {
    if (type == name) return flag;
  }
  return 0;
}

Result<ContainerPlan> PlanContainer(const BundleConfig& config,
                                    const ContainerPlanOptions& options) {
  ContainerPlan plan;
  jail::JailPlan& jail = plan.jail;
  jail.init_mode = jail::InitMode::kExecDirect;
  jail.die_with_parent = false;
  jail.staging_dir = config.root_path;
  jail.read_only_root = config.root_readonly;
  RETURN_IF_ERROR(PlanNamespaces(config, &plan));
  // The rootfs over itself, so that it is a mount pivot_root can take; not nosuid or
  // nodev: the image's own programs and device nodes work as under runc.
  ASSIGN_OR_RETURN(UniqueFd root_tree,
                   jail::PrepareBindTreeWithAttrs(config.root_path, true, 0, 0));
  MountOp root;
  root.kind = MountOp::Kind::kBind;
  root.path = config.root_path;
  root.source_fd = root_tree.get();
  root.description = "bind-mount the rootfs " + config.root_path;
  jail.source_fds.push_back(std::move(root_tree));
  jail.mounts.push_back(std::move(root));
  RETURN_IF_ERROR(PlanMounts(config, options, &plan));
  PlanDevices(config, &plan);
  RETURN_IF_ERROR(PlanMasks(config, &plan));
  if (config.rootfs_propagation == "slave" || config.rootfs_propagation == "rslave") {
    jail.root_propagation = MS_SLAVE;
  } else if (!config.rootfs_propagation.empty() && config.rootfs_propagation != "private" &&
             config.rootfs_propagation != "rprivate") {
    return ConfigFieldError("linux.rootfsPropagation", "\"" + config.rootfs_propagation +
                                                           "\" is not supported by corral-runc");
  }
  RETURN_IF_ERROR(PlanHostAndSysctls(config, &plan));
  RETURN_IF_ERROR(PlanProcess(config, &plan));
  return plan;
}

}  // namespace corral::runtime::oci
