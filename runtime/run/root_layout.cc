#include "runtime/run/root_layout.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/files.h"
#include "jail/image_mount.h"
#include "jail/mounts.h"
#include "runtime/net/in_jail.h"
#include "runtime/run/etc_snapshot.h"
#include "runtime/run/id_mapped_mount.h"
#include "runtime/run/planner.h"
#include "runtime/run/user_ns_plan.h"
#include "runtime/spec/workspace_layers.h"

namespace corral::runtime {

namespace {

using jail::MountOp;

constexpr unsigned long kNoSuidDev = MS_NOSUID | MS_NODEV;

// Host system directories bound read-only in the default (non-rootfs) layout.
const char* const kSystemDirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};

// Top-level names of a rootfs that corral provides itself instead of binding.
const char* const kProvidedTopLevel[] = {"proc", "dev", "sys", "tmp", "mnt", "home", "etc", "run"};

// /etc files worth having: dynamic linking, name service, TLS, time zone, shells, locale.
// Copied, not bound, so that the jail cannot observe later host edits: into a shared
// read-only snapshot (runtime/run/etc_snapshot.h) bound at /etc. Missing ones are skipped.
const char* const kEtcFiles[] = {
    "ld.so.cache", "ld.so.conf", "nsswitch.conf",   "host.conf",      "gai.conf",
    "resolv.conf", "protocols",  "services",        "networks",       "mime.types",
    "localtime",   "timezone",   "os-release",      "debian_version", "bash.bashrc",
    "profile",     "inputrc",    "shells",          "locale.alias",   "locale.gen",
    "magic",       "magic.mime", "mailcap",         "wgetrc",         "xattr.conf",
    "gitconfig",   "pip.conf",   "ssl/openssl.cnf",
};
// /etc directories bound read-only (they are many files, or symlink farms).
const char* const kEtcDirs[] = {
    "alternatives", "ssl/certs", "ca-certificates", "ld.so.conf.d",      "profile.d",
    "python3",      "perl",      "fonts",           "bash_completion.d", "vim"};
// Deliberately absent: shadow, gshadow, sudoers(.d), ssh/, ssl/private, security/, machine-id,
// and passwd/group/hosts/hostname, which are generated.

constexpr size_t kMaxCopiedEtcFile = 1 << 20;

// /proc entries that show the host (its kernel, hardware, memory layout, other tenants'
// activity) and that no common tool needs. README.md ("What the command sees") has the
// table with the reason for each; keep the two in step. A file is masked by a read-only
// /dev/null (reads see EOF, writes reach /dev/null), a directory by an empty read-only
// tmpfs. Names the running kernel lacks are skipped. Everything else stays: /proc/self and
// /proc/<pid>, meminfo, cpuinfo, stat, uptime, loadavg, mounts, vmstat, swaps, filesystems,
// version, cgroups, locks, sysvipc, net (the jail's own netns), tty (ps maps tty numbers).
const char* const kProcMaskedFiles[] = {
    // Docker's/runc's masked files, and sysrq-trigger, which they make read-only.
    "kcore", "keys", "timer_list", "timer_stats", "sched_debug", "latency_stats", "sysrq-trigger",
    // The host kernel's build and boot configuration, and other users' key quotas.
    "config.gz", "cmdline", "bootconfig", "key-users",
    // Kernel symbols, log and modules.
    "kallsyms", "kmsg", "modules",
    // Physical memory map and allocator state: aids for kernel heap grooming, KASLR, rowhammer.
    "kpagecount", "kpageflags", "kpagecgroup", "iomem", "ioports", "vmallocinfo", "vmcore",
    "slabinfo", "pagetypeinfo", "zoneinfo", "buddyinfo",
    // Host-wide activity counters: side channels on other tenants (interrupt timing, disk I/O).
    "interrupts", "softirqs", "schedstat", "diskstats",
    // Host hardware and drivers.
    "partitions", "devices", "dma", "mtrr", "consoles", "crypto", "misc", "mdstat", "fb"};
// Docker's masked directories, the ones Docker makes read-only (bus, fs, irq: host PCI and
// input devices, per-device filesystem state, IRQ affinity), host drivers, and host-wide
// pressure stall information.
const char* const kProcMaskedDirs[] = {"acpi", "scsi", "asound", "bus",
                                       "fs",   "irq",  "driver", "pressure"};
// Read by ps (kernel/pid_max), libcap (kernel/cap_last_cap), python and node (vm/overcommit_*,
// net/core/somaxconn); writes would reach host-wide settings.
const char* const kProcReadOnly[] = {"sys"};

struct DevNode {
  const char* name;
  unsigned major;
  unsigned minor;
};
const DevNode kDevNodes[] = {{"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
                             {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

MountOp NewOp(MountOp::Kind kind, std::string path, std::string data = {}) {
  MountOp op;
  op.kind = kind;
  op.path = std::move(path);
  op.data = std::move(data);
  return op;
}

class RootBuilder {
 public:
  RootBuilder(jail::JailPlan* plan) : plan_(plan) {}

  std::string At(const std::string& jail_path) const { return plan_->staging_dir + jail_path; }

  // A writable area (/tmp, $HOME, /dev, ...): a directory of the root's one tmpfs bound
  // over itself with flags of its own, so that it stays writable (and, for /dev, holds
  // working device nodes) once the root is read-only. `oci_options` is the tmpfs it stands
  // for where the jail is exported as an OCI bundle (runtime/oci).
  void Carve(const std::string& path, mode_t mode, unsigned long flags, std::string oci_options,
             uid_t owner_uid = static_cast<uid_t>(-1), gid_t owner_gid = static_cast<gid_t>(-1)) {
    MountOp dir = NewOp(MountOp::Kind::kMkdir, At(path));
    dir.mode = mode;
    dir.owner_uid = owner_uid;
    dir.owner_gid = owner_gid;
    dir.description = "mkdir " + path;
    Push(std::move(dir));
    MountOp op = NewOp(MountOp::Kind::kInnerBind, At(path), std::move(oci_options));
    op.source_path = At(path);
    op.flags = flags;
    op.description = "bind " + path + " of the root's tmpfs over itself";
    Push(std::move(op));
    dirs_.insert(path);
    mount_points_.insert(path);
  }

  // A tmpfs of its own at `path`: only where an area cannot be carved from the root's.
  void Tmpfs(const std::string& path, const std::string& options, unsigned long flags) {
    MountOp op = NewOp(MountOp::Kind::kTmpfs, At(path), options);
    op.flags = flags;
    op.description = "mount tmpfs at " + path;
    Push(std::move(op));
    dirs_.insert(path);
    mount_points_.insert(path);
  }

  // An empty read-only directory over `path` (under /proc): a bind of one empty directory
  // of the root's tmpfs, removed from the root again by EndMasks().
  void MaskDir(const std::string& path) {
    if (!mask_source_made_) {
      Mkdir(kMaskSource, 0555);
      mask_source_made_ = true;
    }
    MountOp op = NewOp(MountOp::Kind::kInnerBind, At(path));
    op.source_path = At(kMaskSource);
    op.read_only = true;
    op.flags = kNoSuidDev | MS_NOEXEC;
    op.description = "mask " + path + " with an empty directory";
    Push(std::move(op));
    mount_points_.insert(path);
  }

  // The masks' empty directory leaves the root; the binds keep it (nothing else reaches it).
  void EndMasks() {
    if (!mask_source_made_) return;
    MountOp op = NewOp(MountOp::Kind::kRmdir, At(kMaskSource));
    op.description = "remove " + std::string(kMaskSource) + " from the root";
    Push(std::move(op));
  }

  bool InsideAMount(const std::string& path) const { return PathInsideAMount(mount_points_, path); }

  Status Bind(const std::string& host_path, const std::string& path, bool read_only) {
    struct stat st;
    if (::stat(host_path.c_str(), &st) != 0) return Error::FromErrno(errno, host_path);
    RETURN_IF_ERROR(EnsureMountPoint(path));
    MountOp op = NewOp(MountOp::Kind::kBind, At(path));
    if (user_ns()) {
      RETURN_IF_ERROR(jail::DeferBindTree(host_path, read_only, &op));
    } else {
      ASSIGN_OR_RETURN(UniqueFd tree, jail::PrepareBindTree(host_path, read_only));
      op.source_fd = tree.get();
      plan_->source_fds.push_back(std::move(tree));
    }
    if (read_only && S_ISDIR(st.st_mode)) read_only_trees_[path] = host_path;
    return PushBind(std::move(op), path, read_only, S_ISDIR(st.st_mode),
                    "bind-mount " + host_path + " -> " + path);
  }

  // A volume (runtime/volumes/, attached: its path and disk ids filled in): its directory,
  // or its image through a loop device, id-mapped when its files' ids on disk are not the
  // sandbox user's host ids. As root the tree is made here even when the jail has a user
  // namespace: only root in the host's may map ids or attach an image, and the jail's
  // child may still mount a tree made here. A non-root caller's volumes are its own (no
  // mapping needed) and bound as any host directory.
  Status BindVolume(const MountSpec& m, uid_t host_uid, gid_t host_gid) {
    const std::string what = "volume " + m.volume;
    if (m.host_path.empty()) {
      return Error(ErrorCode::kInternal, what + " was not attached before planning");
    }
    const bool mapped =
        m.disk_uid && m.disk_gid && (*m.disk_uid != host_uid || *m.disk_gid != host_gid);
    if (::geteuid() != 0) {
      if (m.image || mapped) {
        return Error(ErrorCode::kPermissionDenied,
                     what +
                         (m.image ? " has a size (an image, mounted through a loop device)"
                                  : " belongs to other ids than the caller's") +
                         ": only root can mount it");
      }
      return Bind(m.host_path, m.container_path, m.read_only);
    }
    const std::string& path = m.container_path;
    RETURN_IF_ERROR(EnsureMountPoint(path));
    ASSIGN_OR_RETURN(UniqueFd tree, m.image ? jail::PrepareImageTree(m.host_path, m.read_only)
                                            : jail::PrepareBindTree(m.host_path, m.read_only));
    if (mapped) {
      RETURN_IF_ERROR(IdmapTree(tree.get(), *m.disk_uid, *m.disk_gid, host_uid, host_gid, what));
    }
    MountOp op = NewOp(MountOp::Kind::kBind, At(path));
    op.source_fd = tree.get();
    plan_->source_fds.push_back(std::move(tree));
    return PushBind(std::move(op), path, m.read_only, /*is_dir=*/true,
                    what + " (" + m.host_path + ") -> " + path);
  }

  // The workspace as an overlay (runtime/sandboxes/workspace_overlay.h): the host's
  // workspace/ as its lower layer, the sandbox's upper layer where its writes land. Mounted
  // by the parent, as root, over the workspace of the user-data bind.
  Status BindWorkspaceOverlay(const JailSpec& spec) {
    if (spec.workspace_overlay_dir.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "workspace_overlay: only a persistent sandbox keeps an overlay (corral "
                   "create); a run's changes would be lost with it");
    }
    if (::geteuid() != 0) {
      return Error(ErrorCode::kPermissionDenied, "workspace_overlay needs root");
    }
    const std::string path = kWorkspacePath;
    ASSIGN_OR_RETURN(UniqueFd tree,
                     jail::PrepareOverlayTree(WorkspaceLowerDirs(spec), WorkspaceUpperDir(spec),
                                              WorkspaceWorkDir(spec)));
    MountOp op = NewOp(MountOp::Kind::kBind, At(path));
    op.source_fd = tree.get();
    plan_->source_fds.push_back(std::move(tree));
    return PushBind(std::move(op), path, /*read_only=*/false, /*is_dir=*/true,
                    "overlay of the workspace (" + WorkspaceUpperDir(spec) + ") -> " + path);
  }

  Status PushBind(MountOp op, const std::string& path, bool read_only, bool is_dir,
                  std::string description) {
    RETURN_IF_ERROR(MkdirParents(path));
    op.source_is_dir = is_dir;
    op.read_only = read_only;
    op.description = std::move(description);
    Push(std::move(op));
    if (is_dir) dirs_.insert(path);
    mount_points_.insert(path);
    return Ok();
  }

  // Mounts a read-only /dev/null over the existing file `path` (under /proc).
  Status MaskFile(const std::string& path) {
    MountOp op = NewOp(MountOp::Kind::kBind, At(path));
    if (user_ns()) {
      RETURN_IF_ERROR(jail::DeferNullMaskTree(&op));
    } else {
      ASSIGN_OR_RETURN(UniqueFd tree, jail::PrepareNullMaskTree());
      op.source_fd = tree.get();
      plan_->source_fds.push_back(std::move(tree));
    }
    op.read_only = true;
    op.flags = MS_NOEXEC;  // as PrepareNullMaskTree makes it
    op.description = "mask " + path;
    Push(std::move(op));
    return Ok();
  }

  // In a user namespace the jail's mounts are made by the child (jail/mounts.h).
  bool user_ns() const { return plan_->user_ns.enabled; }

  // A directory that a bound tree already provides: later binds below it need no mkdir
  // (which would fail on a read-only bind).
  void KnownDir(const std::string& path) { dirs_.insert(path); }

  // The read-only tree (e.g. /usr, /etc) that `path` lies inside, or "" if none.
  std::string ReadOnlyTreeOf(const std::string& path) const {
    for (std::string p = path; !p.empty(); p = p.substr(0, p.rfind('/'))) {
      if (read_only_trees_.count(p) > 0) return p;
    }
    return "";
  }

  // Inside a tree bound read-only nothing can be created, so a mount point there must
  // already exist in the tree's source (docker makes one in its writable image layer;
  // corral's root has none). Existing ones are marked known: no mkdir is planned for them.
  Status EnsureMountPoint(const std::string& path) {
    std::string tree = ReadOnlyTreeOf(path);
    if (tree.empty() || tree == path) return Ok();
    std::string rest = path.substr(tree.size());
    struct stat st;
    if (::stat((read_only_trees_.at(tree) + rest).c_str(), &st) != 0) {
      return Error(ErrorCode::kInvalidArgument,
                   path + ": cannot be a mount point: " + tree +
                       " is read-only in the jail and has no " + rest.substr(1) +
                       "; mount at a path outside the system directories (/opt/..., /srv/..., "
                       "/mnt/..., /work/...) or at one that exists");
    }
    for (std::string p = path; p != tree; p = p.substr(0, p.rfind('/'))) dirs_.insert(p);
    return Ok();
  }

  void Mkdir(const std::string& path, mode_t mode = 0755) {
    if (!dirs_.insert(path).second) return;
    MountOp op = NewOp(MountOp::Kind::kMkdir, At(path));
    op.mode = mode;
    op.description = "mkdir " + path;
    Push(std::move(op));
  }

  // mkdir -p of the parents of `path` (not `path` itself).
  Status MkdirParents(const std::string& path) {
    for (size_t i = path.find('/', 1); i != std::string::npos; i = path.find('/', i + 1)) {
      Mkdir(path.substr(0, i));
    }
    return Ok();
  }

  void File(const std::string& path, std::string content, mode_t mode = 0644) {
    MountOp op = NewOp(MountOp::Kind::kFile, At(path), std::move(content));
    op.mode = mode;
    op.description = "write " + path;
    Push(std::move(op));
  }

  void Symlink(const std::string& path, const std::string& target) {
    MountOp op = NewOp(MountOp::Kind::kSymlink, At(path), target);
    op.description = "symlink " + path + " -> " + target;
    Push(std::move(op));
  }

  // A device node: made with mknod, or in a user namespace (where mknod is refused) the
  // host's node of the same name bound over an empty file.
  Status Device(const std::string& path, unsigned major, unsigned minor) {
    if (user_ns()) {
      MountOp op = NewOp(MountOp::Kind::kBind, At(path));
      RETURN_IF_ERROR(jail::DeferDeviceBind(path, &op));
      struct stat st;
      if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) ||
          st.st_rdev != makedev(major, minor)) {
        return Error(ErrorCode::kUnsupported, "rootless: the host's " + path +
                                                  " is not the device " + std::to_string(major) +
                                                  ":" + std::to_string(minor) +
                                                  ", so it cannot be bound into the jail");
      }
      op.source_is_dir = false;
      op.description = "bind-mount the host's " + path;
      Push(std::move(op));
      return Ok();
    }
    MountOp op = NewOp(MountOp::Kind::kDevice, At(path));
    op.mode = 0666;
    op.device = makedev(major, minor);
    op.description = "mknod " + path;
    Push(std::move(op));
    return Ok();
  }

  void Special(MountOp::Kind kind, const std::string& path, const std::string& data,
               unsigned long flags, const std::string& description) {
    MountOp op = NewOp(kind, At(path), data);
    op.flags = flags;
    op.description = description;
    Push(std::move(op));
    dirs_.insert(path);
    mount_points_.insert(path);
  }

 private:
  void Push(MountOp op) { plan_->mounts.push_back(std::move(op)); }

  jail::JailPlan* plan_;
  std::set<std::string> dirs_{""};
  std::set<std::string> mount_points_;                  // jail paths with a mount of their own
  std::map<std::string, std::string> read_only_trees_;  // jail path -> host source
  bool mask_source_made_ = false;
  static constexpr char kMaskSource[] = "/.corral-masks";
};

// The size of the root's one tmpfs, which every writable area of the jail shares.
std::string SizeOption(const JailSpec& spec) {
  return ",size=" + std::to_string(spec.limits.tmp_size_bytes);
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// A symlink in the host's /etc is kept as a symlink if it points into the bound system
// directories (os-release -> ../usr/lib/os-release); otherwise its target's content is
// copied, since the target (e.g. /run/systemd/resolve/...) is not in the jail.
bool PointsIntoSystemDirs(const std::string& target) {
  for (const char* prefix : {"/usr/", "../usr/", "/lib/", "/bin/"}) {
    if (target.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// How one of kEtcFiles enters the jail's /etc, or nullopt if the host lacks it.
std::optional<EtcEntry> EtcFileEntry(const std::string& etc_source, const std::string& name,
                                     bool keep_all_symlinks) {
  std::string host = etc_source + "/" + name;
  struct stat st;
  if (::lstat(host.c_str(), &st) != 0) return std::nullopt;
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = ::readlink(host.c_str(), target, sizeof target - 1);
    if (n <= 0) return std::nullopt;
    target[n] = '\0';
    if (keep_all_symlinks || PointsIntoSystemDirs(target)) {
      return EtcEntry{EtcEntry::Kind::kSymlink, name, target, ""};
    }
    if (::stat(host.c_str(), &st) != 0) return std::nullopt;  // dangling: skip
  }
  if (!S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > kMaxCopiedEtcFile) {
    return std::nullopt;
  }
  if (::access(host.c_str(), R_OK) != 0) return std::nullopt;  // the jail simply lacks it
  std::string fingerprint = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                            std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
                            "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
                            std::to_string(st.st_ctim.tv_sec) + "." +
                            std::to_string(st.st_ctim.tv_nsec);
  return EtcEntry{EtcEntry::Kind::kHostFile, name, host, fingerprint};
}

std::string PasswdFile(const JailSpec& spec) {
  std::string out = "root:x:0:0:root:/root:/usr/sbin/nologin\n";
  if (spec.uid != 0) {
    out += std::string(kSandboxUserName) + ":x:" + std::to_string(spec.uid) + ":" +
           std::to_string(spec.gid) + ":sandbox:" + kSandboxHome + ":/bin/bash\n";
  }
  out += "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
  return out;
}

std::string GroupFile(const JailSpec& spec) {
  std::string out = "root:x:0:\n";
  if (spec.gid != 0)
    out += std::string(kSandboxUserName) + ":x:" + std::to_string(spec.gid) + ":\n";
  out += "nogroup:x:65534:\n";
  return out;
}

// Without a shared snapshot (the runtime directory is not writable): the same entries
// written into this jail's tmpfs root.
void AddEtcCopy(RootBuilder& root, const std::vector<EtcEntry>& entries) {
  root.Mkdir("/etc");
  for (const EtcEntry& e : entries) {
    std::string path = "/etc/" + e.path;
    switch (e.kind) {
      case EtcEntry::Kind::kDir:
        root.Mkdir(path);
        break;
      case EtcEntry::Kind::kFile:
        root.File(path, e.data, 0644);
        break;
      case EtcEntry::Kind::kSymlink:
        root.Symlink(path, e.data);
        break;
      case EtcEntry::Kind::kHostFile:
        if (auto content = ReadFile(e.data)) root.File(path, std::move(*content), 0644);
        break;
    }
  }
}

Status AddEtc(RootBuilder& root, const JailSpec& spec) {
  std::string etc_source = spec.rootfs ? *spec.rootfs + "/etc" : "/etc";
  bool keep_all_symlinks = spec.rootfs.has_value();
  using Kind = EtcEntry::Kind;
  std::vector<EtcEntry> entries = {
      {Kind::kDir, "ssl", "", ""},
      {Kind::kFile, "passwd", PasswdFile(spec), ""},
      {Kind::kFile, "group", GroupFile(spec), ""},
      {Kind::kFile, "hostname", spec.hostname + "\n", ""},
      {Kind::kFile, "hosts",
       "127.0.0.1\tlocalhost\n127.0.1.1\t" + spec.hostname +
           "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
       ""},
  };
  const bool own_resolver = spec.network.mode == NetworkMode::kAllowlist;
  if (own_resolver) entries.push_back({Kind::kFile, "resolv.conf", net::ResolvConf(), ""});
  for (const char* name : kEtcFiles) {
    if (own_resolver && std::string_view(name) == "resolv.conf") continue;
    if (auto e = EtcFileEntry(etc_source, name, keep_all_symlinks)) entries.push_back(*e);
  }
  std::vector<std::string> bound_dirs;
  for (const char* name : kEtcDirs) {
    std::string host = etc_source + "/" + name;
    struct stat st;
    if (::lstat(host.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    bound_dirs.emplace_back(name);
    entries.push_back({Kind::kDir, name, "", ""});  // the mount point
  }
  if (auto snapshot = EnsureEtcSnapshot(entries)) {
    RETURN_IF_ERROR(root.Bind(*snapshot, "/etc", /*read_only=*/true));
    for (const EtcEntry& e : entries) {
      if (e.kind == Kind::kDir) root.KnownDir("/etc/" + e.path);
    }
  } else {
    spdlog::debug("no shared /etc snapshot ({}); copying /etc into the jail",
                  snapshot.error().message());
    AddEtcCopy(root, entries);
  }
  for (const std::string& name : bound_dirs) {
    RETURN_IF_ERROR(root.Bind(etc_source + "/" + name, "/etc/" + name, /*read_only=*/true));
  }
  return Ok();
}

Status AddSystemDirs(RootBuilder& root, const JailSpec& spec) {
  std::vector<std::string> names;
  std::string source_root = spec.rootfs ? *spec.rootfs : "/";
  if (spec.rootfs) {
    DIR* dir = ::opendir(spec.rootfs->c_str());
    if (dir == nullptr) return Error::FromErrno(errno, "rootfs " + *spec.rootfs);
    while (dirent* e = ::readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (std::find(std::begin(kProvidedTopLevel), std::end(kProvidedTopLevel), name) !=
          std::end(kProvidedTopLevel)) {
        continue;
      }
      names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
  } else {
    names.assign(std::begin(kSystemDirs), std::end(kSystemDirs));
  }
  for (const std::string& name : names) {
    std::string host = Join(source_root, name);
    struct stat st;
    if (::lstat(host.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = ::readlink(host.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      root.Symlink("/" + name, target);
    } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
      RETURN_IF_ERROR(root.Bind(host, "/" + name, /*read_only=*/true));
    }
  }
  return Ok();
}

// Programs expect a writable /var/tmp (sticky, like /tmp) and a /run; both are areas of the
// root's tmpfs. With a rootfs whose /var is bound read-only, /var/tmp must exist there.
void AddVarTmpAndRun(RootBuilder& root, const JailSpec& spec) {
  if (root.ReadOnlyTreeOf("/var").empty()) {
    root.Mkdir("/var");
    root.Carve("/var/tmp", 01777, kNoSuidDev, "mode=1777" + SizeOption(spec));
  } else if (root.EnsureMountPoint("/var/tmp")) {
    // A rootfs's /var, bound read-only: the directory there is not the root's, so /var/tmp
    // takes a tmpfs of its own (a rootfs's jail has a superblock more).
    root.Tmpfs("/var/tmp", "mode=1777" + SizeOption(spec), kNoSuidDev);
  }
  root.Carve("/run", 0755, kNoSuidDev | MS_NOEXEC, "mode=0755" + SizeOption(spec));
}

Status AddAgentAndCustomMounts(RootBuilder& root, const JailSpec& spec) {
  root.Mkdir("/mnt");
  if (spec.skills_dir) RETURN_IF_ERROR(root.Bind(*spec.skills_dir, kSkillsPath, true));
  if (spec.user_data_dir) RETURN_IF_ERROR(root.Bind(*spec.user_data_dir, kUserDataPath, false));
  if (spec.workspace_overlay) RETURN_IF_ERROR(root.BindWorkspaceOverlay(spec));
  if (spec.acp_workspace_dir) {
    RETURN_IF_ERROR(root.Bind(*spec.acp_workspace_dir, kAcpWorkspacePath, true));
  }
  // Parents before children: /opt/a must be mounted before /opt/a/b.
  std::vector<MountSpec> mounts = spec.mounts;
  std::stable_sort(mounts.begin(), mounts.end(), [](const MountSpec& a, const MountSpec& b) {
    return a.container_path < b.container_path;
  });
  for (const MountSpec& m : mounts) {
    if (m.volume.empty()) {
      RETURN_IF_ERROR(root.Bind(m.host_path, m.container_path, m.read_only));
    } else {
      RETURN_IF_ERROR(root.BindVolume(m, HostUidOf(spec), HostGidOf(spec)));
    }
  }
  return Ok();
}

// docker run -w makes a missing working directory in the container's writable layer. The
// jail's root is read-only, so a working directory that no mount holds (-w /work) becomes
// an area of the root's tmpfs, owned by the sandbox user; one inside a mount is made,
// where the sandbox user may, when the command starts (jail/exec.cc).
Status AddWorkdir(RootBuilder& root, const JailSpec& spec) {
  if (!spec.workdir || *spec.workdir == "/" || root.InsideAMount(*spec.workdir)) return Ok();
  const std::string& path = *spec.workdir;
  RETURN_IF_ERROR(root.MkdirParents(path));
  root.Carve(path, 0755, kNoSuidDev,
             "mode=0755,uid=" + std::to_string(spec.uid) + ",gid=" + std::to_string(spec.gid) +
                 SizeOption(spec),
             spec.uid, spec.gid);
  return Ok();
}

Status AddDev(RootBuilder& root, const JailSpec& spec) {
  // Not nodev: its nodes must work. Read-only once they are made.
  root.Carve("/dev", 0755, MS_NOSUID | MS_NOEXEC, "mode=0755,size=65536");
  for (const DevNode& node : kDevNodes) {
    RETURN_IF_ERROR(root.Device(std::string("/dev/") + node.name, node.major, node.minor));
  }
  root.Symlink("/dev/fd", "/proc/self/fd");
  root.Symlink("/dev/stdin", "/proc/self/fd/0");
  root.Symlink("/dev/stdout", "/proc/self/fd/1");
  root.Symlink("/dev/stderr", "/proc/self/fd/2");
  root.Symlink("/dev/ptmx", "pts/ptmx");
  root.Mkdir("/dev/pts");
  root.Carve("/dev/shm", 01777, kNoSuidDev | MS_NOEXEC, "mode=1777" + SizeOption(spec));
  // Read-only after /dev/shm is a mount of its own: only /dev itself becomes read-only.
  root.Special(MountOp::Kind::kRemountReadOnly, "/dev", "", 0, "remount /dev read-only");
  // Its own superblock, the one kernel object here beyond the tmpfs and /proc: ptys for
  // the commands that want one (script, expect, python's pty, corral exec -t).
  root.Special(MountOp::Kind::kDevpts, "/dev/pts", "newinstance,ptmxmode=0666,mode=0620",
               MS_NOSUID | MS_NOEXEC, "mount devpts at /dev/pts");
  return Ok();
}

Status AddProc(RootBuilder& root) {
  root.Special(MountOp::Kind::kProc, "/proc", "", kNoSuidDev | MS_NOEXEC, "mount proc at /proc");
  for (const char* name : kProcMaskedFiles) {
    std::string path = std::string("/proc/") + name;  // same kernel: same entries
    if (::access(path.c_str(), F_OK) != 0) continue;
    RETURN_IF_ERROR(root.MaskFile(path));
  }
  for (const char* name : kProcMaskedDirs) {
    std::string path = std::string("/proc/") + name;
    if (::access(path.c_str(), F_OK) != 0) continue;
    root.MaskDir(path);
  }
  root.EndMasks();
  for (const char* name : kProcReadOnly) {
    std::string path = std::string("/proc/") + name;
    if (::access(path.c_str(), F_OK) != 0) continue;
    root.Special(MountOp::Kind::kReadOnly, path, "", 0, "make " + path + " read-only");
  }
  return Ok();
}

}  // namespace

bool PathInsideAMount(const std::set<std::string>& mount_points, const std::string& path) {
  for (std::string p = path; !p.empty(); p = p.substr(0, p.rfind('/'))) {
    if (mount_points.count(p) > 0) return true;
  }
  return false;
}

Result<std::set<std::string>> MountPointsOf(const JailSpec& spec) {
  jail::JailPlan plan;
  plan.staging_dir = "/staging";  // only to strip it again
  plan.user_ns.enabled = true;    // plans the binds without opening their trees
  RETURN_IF_ERROR(AddRootLayout(spec, &plan));
  std::set<std::string> points;
  for (const jail::MountOp& op : plan.mounts) {
    using Kind = jail::MountOp::Kind;
    const bool mount = op.kind == Kind::kTmpfs || op.kind == Kind::kBind ||
                       op.kind == Kind::kInnerBind || op.kind == Kind::kProc ||
                       op.kind == Kind::kDevpts;
    if (mount && op.path.size() > plan.staging_dir.size()) {
      points.insert(op.path.substr(plan.staging_dir.size()));
    }
  }
  return points;
}

Status AddRootLayout(const JailSpec& spec, jail::JailPlan* plan) {
  RootBuilder root(plan);
  // The root itself, read-only after pivot_root (plan->read_only_root), and the one tmpfs
  // of the jail: its writable areas are directories of it bound over themselves (Carve),
  // so they share its size, and its pages count against the memory limit as they are
  // written.
  MountOp top = NewOp(MountOp::Kind::kTmpfs, plan->staging_dir, "mode=0755" + SizeOption(spec));
  top.flags = kNoSuidDev;
  top.description = "mount tmpfs root at " + plan->staging_dir;
  plan->mounts.push_back(std::move(top));

  RETURN_IF_ERROR(AddSystemDirs(root, spec));
  RETURN_IF_ERROR(AddEtc(root, spec));
  root.Mkdir("/home");
  root.Carve(kSandboxHome, 0700, kNoSuidDev,
             "mode=0700,uid=" + std::to_string(spec.uid) + ",gid=" + std::to_string(spec.gid) +
                 SizeOption(spec),
             spec.uid, spec.gid);
  root.Carve("/tmp", 01777, kNoSuidDev, "mode=1777" + SizeOption(spec));
  AddVarTmpAndRun(root, spec);
  RETURN_IF_ERROR(AddAgentAndCustomMounts(root, spec));
  RETURN_IF_ERROR(AddWorkdir(root, spec));
  RETURN_IF_ERROR(AddDev(root, spec));
  return AddProc(root);
}

}  // namespace corral::runtime
