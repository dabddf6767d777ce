// An OCI container's mounts, resolved inside its root (MountOp::in_root).
//
// A container image is untrusted: its /etc could be a symlink to the host's /etc, and a
// config mounting a tmpfs at /etc/x would then cover a host directory. So every mount
// point is looked up with openat2(RESOLVE_IN_ROOT) under an fd of the staging directory
// (absolute symlinks and ".." stay inside it), missing directories are made one level at
// a time the same way, and the mount lands on the fd that lookup returned (move_mount
// with MOVE_MOUNT_T_EMPTY_PATH, or mount(2) on its /proc/self/fd path), never on a path
// walked again. Child side: syscalls only.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "jail/child_text.h"
#include "jail/container.h"
#include "jail/syscalls.h"

namespace corral::jail {

namespace {

int OpenInRoot(int root_fd, const char* rel, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root_fd, rel, &how, sizeof how));
}

// Closes an fd without disturbing errno.
void CloseKeepingErrno(int fd) {
  int err = errno;
  if (fd >= 0) ::close(fd);
  errno = err;
}

int OpenMountPointInRoot(int root_fd, const char* rel, bool make, bool last_is_dir,
                         int links_left = 16);

// A component that exists as a symlink whose target (inside the root) does not: the path
// is spelled again through the link's target and made from there, as runc's securejoin
// makes it. `path` holds the components up to the link, `rest` what follows it.
int FollowDanglingLink(int root_fd, int parent, const char* name, const char* path,
                       const char* rest, bool last_is_dir, int links_left) {
  if (links_left == 0) {
    errno = ELOOP;
    return -1;
  }
  char target[4096];
  ssize_t n = ::readlinkat(parent, name, target, sizeof target - 1);
  if (n < 0) return -1;
  target[n] = '\0';
  char respelled[4096];
  size_t len = 0;
  bool fits = true;
  auto append = [&](const char* text, size_t count) {
    if (len + count >= sizeof respelled) fits = false;
    if (!fits) return;
    std::memcpy(respelled + len, text, count);
    len += count;
  };
  if (target[0] != '/') {  // relative to the link's own directory
    const char* slash = std::strrchr(path, '/');
    if (slash != nullptr) append(path, static_cast<size_t>(slash - path) + 1);
  }
  const char* target_rel = target[0] == '/' ? target + 1 : target;
  append(target_rel, std::strlen(target_rel));
  if (*rest != '\0') {
    append("/", 1);
    append(rest, std::strlen(rest));
  }
  if (!fits) {
    errno = ENAMETOOLONG;
    return -1;
  }
  respelled[len] = '\0';
  return OpenMountPointInRoot(root_fd, respelled, true, last_is_dir, links_left - 1);
}

// The O_PATH fd of `rel` under the root; with `make`, what is missing is made: directories
// on the way, and the last component as a directory or (last_is_dir false) an empty file.
int OpenMountPointInRoot(int root_fd, const char* rel, bool make, bool last_is_dir,
                         int links_left) {
  int fd = OpenInRoot(root_fd, rel, O_PATH);
  if (fd >= 0 || errno != ENOENT || !make) return fd;
  char path[4096];
  const size_t n = std::strlen(rel);
  if (n >= sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(path, rel, n + 1);
  int parent = ::fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
  size_t start = 0;
  while (parent >= 0 && start < n) {
    size_t end = start;
    while (end < n && path[end] != '/') ++end;
    const bool last = end == n;
    path[end] = '\0';
    const char* name = path + start;
    int made = 0;
    if (*name != '\0' && std::strcmp(name, ".") != 0) {
      if (last && !last_is_dir) {
        made = ::openat(parent, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (made >= 0) ::close(made), made = 0;
        if (made < 0 && errno == ELOOP) made = 0;  // a symlink: resolved in the root below
      } else {
        made = ::mkdirat(parent, name, 0755);
        if (made < 0 && errno == EEXIST) made = 0;
      }
    }
    int next = made == 0 ? OpenInRoot(root_fd, path, O_PATH) : -1;
    if (next < 0 && errno == ENOENT) {
      next = FollowDanglingLink(root_fd, parent, name, path, last ? "" : path + end + 1,
                                last_is_dir, links_left);
      CloseKeepingErrno(parent);
      return next;
    }
    CloseKeepingErrno(parent);
    parent = next;
    if (!last) path[end] = '/';
    start = end + 1;
  }
  return parent;
}

// "/proc/self/fd/N": the mount(2) target for an fd that lookup returned.
struct FdPath {
  char text[64];
  explicit FdPath(int fd) {
    ChildText(text, sizeof text).Add("/proc/self/fd/").Add(static_cast<long>(fd));
  }
};

// The parent directory of `rel` (made if missing) and the last component's name.
int OpenParentInRoot(int root_fd, const char* rel, char (&parent_path)[4096], const char** leaf) {
  const size_t n = std::strlen(rel);
  if (n >= sizeof parent_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(parent_path, rel, n + 1);
  char* slash = std::strrchr(parent_path, '/');
  if (slash == nullptr) {
    *leaf = rel;
    return ::fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
  }
  *slash = '\0';
  *leaf = rel + (slash - parent_path) + 1;
  return OpenMountPointInRoot(root_fd, parent_path, true, true);
}

bool MakeNode(const MountOp& op, int root_fd) {
  char parent_path[4096];
  const char* leaf = nullptr;
  int parent = OpenParentInRoot(root_fd, op.path.c_str(), parent_path, &leaf);
  if (parent < 0) return false;
  // The parent is an O_PATH fd; *at() calls accept it as a directory.
  bool ok;
  if (op.kind == MountOp::Kind::kSymlink) {
    ok = ::symlinkat(op.data.c_str(), parent, leaf) == 0 || errno == EEXIST;
  } else {
    ::unlinkat(parent, leaf, 0);  // an image's own node of that name gives way, as in runc
    ok = ::mknodat(parent, leaf, op.file_type | op.mode, op.device) == 0 &&
         ::fchmodat(parent, leaf, op.mode, 0) == 0 &&
         ::fchownat(parent, leaf, op.owner_uid, op.owner_gid, AT_SYMLINK_NOFOLLOW) == 0;
  }
  CloseKeepingErrno(parent);
  return ok;
}

bool BindOnto(int tree, int target) {
  return sys::MoveMount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) ==
         0;
}

// Over a directory: an empty read-only tmpfs. Over anything else: /dev/null (source_fd).
bool MaskPath(const MountOp& op, int source_fd, int target) {
  struct stat st;
  if (::fstat(target, &st) != 0) return false;
  if (S_ISDIR(st.st_mode)) {
    return ::mount("tmpfs", FdPath(target).text, "tmpfs",
                   MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "nr_inodes=1") == 0;
  }
  (void)op;
  return BindOnto(source_fd, target);
}

bool RemountReadOnly(int target, bool whole_tree) {
  const unsigned rec = whole_tree ? AT_RECURSIVE : 0;
  int tree = sys::OpenTree(target, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec);
  if (tree < 0) return false;
  bool ok =
      sys::MountSetattr(tree, "", AT_EMPTY_PATH | rec, MOUNT_ATTR_RDONLY, 0, MS_PRIVATE) == 0 &&
      BindOnto(tree, target);
  CloseKeepingErrno(tree);
  return ok;
}

bool MountNew(const MountOp& op, int target) {
  const char* fstype = op.kind == MountOp::Kind::kTmpfs    ? "tmpfs"
                       : op.kind == MountOp::Kind::kProc   ? "proc"
                       : op.kind == MountOp::Kind::kDevpts ? "devpts"
                                                           : op.fstype.c_str();
  const char* source = op.source_path.empty() ? fstype : op.source_path.c_str();
  const unsigned long flags = op.flags | (op.read_only ? MS_RDONLY : 0);
  return ::mount(source, FdPath(target).text, fstype, flags,
                 op.data.empty() ? nullptr : op.data.c_str()) == 0;
}

}  // namespace

bool RunInRootOp(const MountOp& op, int source_fd, int root_fd) {
  using Kind = MountOp::Kind;
  if (op.kind == Kind::kDevice || op.kind == Kind::kSymlink) return MakeNode(op, root_fd);
  const bool optional = op.kind == Kind::kMask || op.kind == Kind::kReadOnly;
  const bool is_dir = op.kind != Kind::kBind || op.source_is_dir;
  int target = OpenMountPointInRoot(root_fd, op.path.c_str(), !optional, is_dir);
  if (target < 0) return optional && errno == ENOENT;
  bool ok = false;
  switch (op.kind) {
    case Kind::kBind:
      ok = BindOnto(source_fd, target);
      break;
    case Kind::kMask:
      ok = MaskPath(op, source_fd, target);
      break;
    case Kind::kReadOnly:
      ok = RemountReadOnly(target, true);
      break;
    case Kind::kRemountReadOnly:
      ok = sys::MountSetattr(target, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0) == 0;
      break;
    case Kind::kMkdir:
      ok = true;
      break;
    case Kind::kTmpfs:
    case Kind::kProc:
    case Kind::kDevpts:
    case Kind::kFilesystem:
      ok = MountNew(op, target);
      break;
    default:
      errno = EINVAL;
      break;
  }
  CloseKeepingErrno(target);
  return ok;
}

}  // namespace corral::jail
