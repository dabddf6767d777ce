#include "jail/mounts.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "jail/child_text.h"
#include "jail/container.h"
#include "jail/setup_record.h"
#include "jail/syscalls.h"
#include "jail/user_ns.h"

namespace corral::jail {

namespace {

Result<UniqueFd> DetachedTree(const std::string& host_path, uint64_t attrs, uint64_t clear,
                              bool recursive = true) {
  const unsigned rec = recursive ? AT_RECURSIVE : 0;
  UniqueFd tree(sys::OpenTree(AT_FDCWD, host_path.c_str(),
                              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec | AT_SYMLINK_NOFOLLOW));
  if (!tree) return Error::FromErrno(errno, "open_tree " + host_path);
  // AT_RECURSIVE: a submount of a read-only tree (say /usr/local on its own filesystem)
  // must not stay writable, which a classic MS_REMOUNT|MS_RDONLY would leave it.
  if (sys::MountSetattr(tree.get(), "", AT_EMPTY_PATH | rec, attrs, clear, MS_PRIVATE) != 0) {
    return Error::FromErrno(errno, "mount_setattr " + host_path);
  }
  return tree;
}

}  // namespace

Result<UniqueFd> PrepareBindTree(const std::string& host_path, bool read_only) {
  uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (read_only) attrs |= MOUNT_ATTR_RDONLY;
  return DetachedTree(host_path, attrs, 0);
}

Result<UniqueFd> PrepareBindTreeWithAttrs(const std::string& host_path, bool recursive,
                                          uint64_t attrs, uint64_t clear) {
  return DetachedTree(host_path, attrs, clear, recursive);
}

Result<UniqueFd> PrepareNullMaskTree() {
  // The host's /dev is usually a devtmpfs without nodev already; clearing it makes sure.
  return DetachedTree("/dev/null", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                      MOUNT_ATTR_NODEV);
}

namespace {

Status Defer(const std::string& host_path, uint64_t attrs, uint64_t clear, MountOp* op) {
  struct stat st;
  if (::lstat(host_path.c_str(), &st) != 0) return Error::FromErrno(errno, host_path);
  op->source_fd = -1;
  op->source_path = host_path;
  op->source_attrs = attrs;
  op->source_attrs_clear = clear;
  op->source_dev = st.st_dev;
  op->source_ino = st.st_ino;
  return Ok();
}

}  // namespace

Status DeferBindTree(const std::string& host_path, bool read_only, MountOp* op) {
  uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (read_only) attrs |= MOUNT_ATTR_RDONLY;
  return Defer(host_path, attrs, 0, op);
}

Status DeferNullMaskTree(MountOp* op) {
  return Defer("/dev/null", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0, op);
}

Status DeferDeviceBind(const std::string& host_path, MountOp* op) {
  return Defer(host_path, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0, op);
}

namespace {

bool Fail(int report_fd, const MountOp& op, const char* what_if_no_description);

// Trees the child cloned for deferred binds, by index into plan.mounts' deferred binds.
// Static: the child allocates nothing (it is a copy of the parent's memory, so this is
// its own).
int g_deferred_trees[kMaxDeferredBinds];

// Clones every deferred bind source while the paths still mean the host's (the staging
// tmpfs may cover a source, e.g. a user-data directory under /tmp).
bool OpenDeferredBinds(const JailPlan& plan, int report_fd) {
  size_t n = 0;
  for (const MountOp& op : plan.mounts) {
    if (op.kind != MountOp::Kind::kBind || op.source_fd >= 0) continue;
    if (n == kMaxDeferredBinds) {
      errno = E2BIG;
      return Fail(report_fd, op, "too many binds");
    }
    int tree =
        sys::OpenTree(AT_FDCWD, op.source_path.c_str(),
                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
    if (tree < 0) return Fail(report_fd, op, op.source_path.c_str());
    g_deferred_trees[n++] = tree;
    struct stat st;
    if (::fstat(tree, &st) != 0) return Fail(report_fd, op, op.source_path.c_str());
    if (st.st_dev != op.source_dev || st.st_ino != op.source_ino) {
      errno = ESTALE;  // replaced between planning and now
      return Fail(report_fd, op, op.source_path.c_str());
    }
    if (sys::MountSetattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, op.source_attrs,
                          op.source_attrs_clear, MS_PRIVATE) != 0) {
      return Fail(report_fd, op, op.source_path.c_str());
    }
  }
  return true;
}

// Every failure path reports and returns false; this keeps each call site to one line.
bool Fail(int report_fd, const MountOp& op, const char* what_if_no_description) {
  int err = errno;
  ReportSetupFailure(report_fd, SetupStep::kMount, err,
                     op.description.empty() ? what_if_no_description : op.description.c_str());
  return false;
}

bool MakeMountPoint(const MountOp& op) {
  if (op.source_is_dir) {
    return ::mkdir(op.path.c_str(), 0755) == 0 || errno == EEXIST;
  }
  // An existing file (say /proc/kcore, being masked) is a mount point as it is; opening
  // it for writing could fail or have effects.
  struct stat st;
  if (::lstat(op.path.c_str(), &st) == 0) return true;
  int fd = ::open(op.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

bool CreateFile(const MountOp& op) {
  int fd = ::open(op.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, op.mode);
  if (fd < 0) return false;
  bool ok = WriteWholeString(fd, op.data);
  int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

// Clones `source` (with what is mounted below it when `recursive`), gives the copy the
// mount attributes `set` and `clear`, private propagation, and mounts it at `target`.
bool BindCopy(const char* source, const char* target, bool recursive, uint64_t set,
              uint64_t clear) {
  const unsigned rec = recursive ? AT_RECURSIVE : 0;
  int tree = sys::OpenTree(AT_FDCWD, source,
                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW | rec);
  if (tree < 0) return false;
  bool ok = sys::MountSetattr(tree, "", AT_EMPTY_PATH | rec, set, clear, MS_PRIVATE) == 0 &&
            sys::MoveMount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) == 0;
  int err = errno;
  ::close(tree);
  errno = err;
  return ok;
}

// Makes an existing directory read-only by mounting a read-only copy of it over itself.
bool MakeReadOnly(const MountOp& op) {
  return BindCopy(op.path.c_str(), op.path.c_str(), /*recursive=*/true,
                  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
}

// Binds a directory of the new root (already built) at `op.path` with exactly the mount
// flags of the op: one tmpfs serves every writable area of the jail this way, each a mount
// of its own but not a superblock of its own (a superblock costs kernel memory in every
// memory cgroup on the host: README, "What one sandbox costs"). Not recursive: it binds
// the directory, not what may be mounted below it.
bool InnerBind(const MountOp& op) {
  uint64_t set = 0;
  uint64_t clear = 0;
  auto attr = [&](bool on, uint64_t a) { (on ? set : clear) |= a; };
  attr(op.read_only, MOUNT_ATTR_RDONLY);
  attr((op.flags & MS_NOSUID) != 0, MOUNT_ATTR_NOSUID);
  attr((op.flags & MS_NODEV) != 0, MOUNT_ATTR_NODEV);
  attr((op.flags & MS_NOEXEC) != 0, MOUNT_ATTR_NOEXEC);
  return BindCopy(op.source_path.c_str(), op.path.c_str(), /*recursive=*/false, set, clear);
}

bool MakeDir(const MountOp& op) {
  if (::mkdir(op.path.c_str(), op.mode) != 0 && errno != EEXIST) return false;
  if ((op.owner_uid != static_cast<uid_t>(-1) || op.owner_gid != static_cast<gid_t>(-1)) &&
      ::lchown(op.path.c_str(), op.owner_uid, op.owner_gid) != 0) {
    return false;
  }
  return ::chmod(op.path.c_str(), op.mode) == 0;  // after chown, which may clear bits
}

bool RunOp(const MountOp& op, int source_fd) {
  switch (op.kind) {
    case MountOp::Kind::kTmpfs:
      return (::mkdir(op.path.c_str(), 0755) == 0 || errno == EEXIST) &&
             ::mount("tmpfs", op.path.c_str(), "tmpfs", op.flags | (op.read_only ? MS_RDONLY : 0),
                     op.data.c_str()) == 0;
    case MountOp::Kind::kBind:
      return MakeMountPoint(op) &&
             sys::MoveMount(source_fd, "", AT_FDCWD, op.path.c_str(), MOVE_MOUNT_F_EMPTY_PATH) == 0;
    case MountOp::Kind::kInnerBind:
      return InnerBind(op);
    case MountOp::Kind::kMkdir:
      return MakeDir(op);
    case MountOp::Kind::kRmdir:
      return ::rmdir(op.path.c_str()) == 0;
    case MountOp::Kind::kFile:
      return CreateFile(op);
    case MountOp::Kind::kSymlink:
      return ::symlink(op.data.c_str(), op.path.c_str()) == 0;
    case MountOp::Kind::kDevice:
      return ::mknod(op.path.c_str(), S_IFCHR | op.mode, op.device) == 0;
    case MountOp::Kind::kProc:
      return (::mkdir(op.path.c_str(), 0555) == 0 || errno == EEXIST) &&
             ::mount("proc", op.path.c_str(), "proc", op.flags, nullptr) == 0;
    case MountOp::Kind::kDevpts:
      return (::mkdir(op.path.c_str(), 0755) == 0 || errno == EEXIST) &&
             ::mount("devpts", op.path.c_str(), "devpts", op.flags, op.data.c_str()) == 0;
    case MountOp::Kind::kReadOnly:
      return MakeReadOnly(op);
    case MountOp::Kind::kRemountReadOnly:
      return sys::MountSetattr(AT_FDCWD, op.path.c_str(), 0, MOUNT_ATTR_RDONLY, 0) == 0;
    case MountOp::Kind::kFilesystem:
    case MountOp::Kind::kMask:
      break;  // only in an OCI container's root (op.in_root: jail/container_mounts.cc)
  }
  errno = EINVAL;
  return false;
}

// An fd of the staging directory for in-root ops (jail/container_mounts.cc), opened at the
// first of them: after the op that binds the container's rootfs there.
int g_container_root_fd = -1;
int ContainerRootFd(const JailPlan& plan) {
  if (g_container_root_fd < 0) {
    g_container_root_fd = ::open(plan.staging_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  return g_container_root_fd;
}

// pivot_root(".", ".") stacks the old root on top of the new one; detaching "." then
// removes it, so no path in the jail leads back to the host's root.
//
// pivot_root refuses (EINVAL) when the current root is the initramfs itself, as on a host
// booted without switch_root (our cgroup v2 test VM is one). Then the new root is moved
// over "/" and chroot()ed into, like switch_root does: the old root stays in the mount
// table, covered, and without CAP_SYS_CHROOT (dropped later) there is no way back to it.
bool PivotInto(const JailPlan& plan, int report_fd) {
  char what[512];
  ChildText(what, sizeof what).Add("pivot_root into ").Add(plan.staging_dir.c_str());
  if (::chdir(plan.staging_dir.c_str()) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kPivotRoot, errno, what);
    return false;
  }
  bool pivoted = sys::PivotRoot(".", ".") == 0;
  if (pivoted) {
    pivoted = ::umount2(".", MNT_DETACH) == 0;
  } else if (errno == EINVAL) {
    ChildText(what, sizeof what).Add("move ").Add(plan.staging_dir.c_str()).Add(" to / and chroot");
    pivoted = ::mount(".", "/", nullptr, MS_MOVE, nullptr) == 0 && ::chroot(".") == 0;
  }
  if (!pivoted || ::chdir("/") != 0) {
    ReportSetupFailure(report_fd, SetupStep::kPivotRoot, errno, what);
    return false;
  }
  if (g_container_root_fd >= 0) ::close(g_container_root_fd);
  if (plan.root_propagation != 0 &&
      ::mount(nullptr, "/", nullptr, MS_REC | plan.root_propagation, nullptr) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kPivotRoot, errno, "set the root's propagation");
    return false;
  }
  if (plan.read_only_root && sys::MountSetattr(AT_FDCWD, "/", 0, MOUNT_ATTR_RDONLY, 0) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kPivotRoot, errno, "remount / read-only");
    return false;
  }
  return true;
}

}  // namespace

bool WriteWholeString(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool BuildRoot(const JailPlan& plan, int report_fd) {
  // The namespace starts as a copy of the host's, with the host's shared propagation;
  // without this, every mount below would appear on the host too.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    ReportSetupFailure(report_fd, SetupStep::kMount, errno, "make / private");
    return false;
  }
  if (plan.user_ns.enabled &&
      (!OpenDeferredBinds(plan, report_fd) || !TakeInitIds(plan, report_fd))) {
    return false;
  }
  // Device nodes and generated files get exactly the modes in the plan.
  mode_t old_umask = ::umask(0);
  size_t deferred = 0;
  for (const MountOp& op : plan.mounts) {
    const bool own_tree =
        plan.user_ns.enabled && op.kind == MountOp::Kind::kBind && op.source_fd < 0;
    const int source_fd = own_tree ? g_deferred_trees[deferred++] : op.source_fd;
    bool ok = op.in_root ? RunInRootOp(op, source_fd, ContainerRootFd(plan)) : RunOp(op, source_fd);
    int err = errno;
    if (own_tree) ::close(source_fd);
    errno = err;
    if (!ok) {
      ::umask(old_umask);
      return Fail(report_fd, op, op.path.c_str());
    }
  }
  ::umask(old_umask);
  return PivotInto(plan, report_fd);
}

}  // namespace corral::jail
