#include "runtime/sandboxes/mount_switch.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd_pair.h"
#include "jail/syscalls.h"
#include "runtime/sandboxes/sandbox_store.h"

namespace corral::runtime {

namespace {

enum class Step : int {
  kSetns = 1,
  kChroot,
  kSeal,
  kKeep,
  kUmount,
  kMove,
  kVerify,
  kMountPoint,
};

// What the child reports when a step fails.
struct ChildFailure {
  Step step = Step::kSetns;
  int err = 0;     // errno
  int index = -1;  // into the mounts
};

const char* StepName(Step step) {
  switch (step) {
    case Step::kSetns:
      return "setns into the sandbox's mount namespace";
    case Step::kChroot:
      return "chroot into the sandbox's root";
    case Step::kSeal:
      return "make the mount there read-only (EBUSY: a process in the sandbox has a file on "
             "it open for writing)";
    case Step::kKeep:
      return "keep a copy of the mount there (open_tree)";
    case Step::kUmount:
      return "unmount the mount there";
    case Step::kMove:
      return "move_mount";
    case Step::kVerify:
      return "check the new mount (another file system is there)";
    case Step::kMountPoint:
      return "make its mount point (only the jail's own tmpfs can get one, as in a cold create)";
  }
  return "unknown step";
}

// A new mount point, made as a cold create makes one: in the jail's root tmpfs (read-only
// in the jail, so through a writable clone of that one mount, which reaches nothing else),
// and only where it then shows at the path: a directory that a bind hides (inside
// /mnt/skills, say) is no mount point, and the switch fails instead. Syscalls only.
bool MakeMountPoint(const MountSwitch& m) {
  struct stat st;
  if (::lstat(m.jail_path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode) == m.is_dir) return true;
    errno = m.is_dir ? ENOTDIR : EISDIR;
    return false;
  }
  if (errno != ENOENT) return false;
  const int rw_root =
      jail::sys::OpenTree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
  if (rw_root < 0) return false;
  bool ok = jail::sys::MountSetattr(rw_root, "", AT_EMPTY_PATH, 0, MOUNT_ATTR_RDONLY, 0) == 0;
  for (size_t i = 0; ok && i < m.prefixes.size(); ++i) {
    const char* path = m.prefixes[i].c_str();
    if (::lstat(path, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        ok = false;
      }
      continue;
    }
    const bool last = i + 1 == m.prefixes.size();
    if (last && !m.is_dir) {
      const int fd = ::openat(rw_root, path + 1, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
      ok = fd >= 0;
      if (ok) ::close(fd);
    } else {
      ok = ::mkdirat(rw_root, path + 1, 0755) == 0;
    }
    if (ok && ::lstat(path, &st) != 0) ok = false;  // made where the path does not lead
  }
  const int err = errno;
  ::close(rw_root);
  errno = err;
  return ok;
}

// Replaces the mount at m.jail_path by m.tree: sealed first when asked, detached (not
// stacked: the sandbox's mount table then reads as a cold one's, and nothing keeps the old
// mount point in use), and put back when the new one cannot be moved in. Syscalls only.
bool ReplaceMount(const MountSwitch& m, Step* failed) {
  const char* path = m.jail_path.c_str();
  if (m.seal_replaced &&
      jail::sys::MountSetattr(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, MOUNT_ATTR_RDONLY, 0, 0) != 0) {
    *failed = Step::kSeal;
    return false;
  }
  auto unseal = [&] {
    const int err = errno;
    if (m.seal_replaced) {
      (void)jail::sys::MountSetattr(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, 0, MOUNT_ATTR_RDONLY, 0);
    }
    errno = err;
  };
  // A copy of the old mount (the same file system, its attributes), to put back.
  const int keep = m.seal_replaced ? jail::sys::OpenTree(
                                         AT_FDCWD, path,
                                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW)
                                   : -1;
  if (m.seal_replaced && keep < 0) {
    unseal();
    *failed = Step::kKeep;
    return false;
  }
  if (::umount2(path, MNT_DETACH) != 0 && errno != EINVAL) {
    unseal();
    if (keep >= 0) ::close(keep);
    *failed = Step::kUmount;
    return false;
  }
  if (jail::sys::MoveMount(m.tree.get(), "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    const int err = errno;
    if (keep >= 0) {
      if (jail::sys::MoveMount(keep, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) == 0) unseal();
      ::close(keep);
    }
    errno = err;
    *failed = Step::kMove;
    return false;
  }
  if (keep >= 0) ::close(keep);
  return true;
}

// Enters the init's mount namespace and root (as jail/enter.cc does: after a chroot
// fallback the namespace's root is not the jail's), then puts each mount at its place.
[[noreturn]] void SwitchInChild(int init_pidfd, int root_fd, const std::vector<MountSwitch>& mounts,
                                int report_fd) {
  ChildFailure f;
  auto fail = [&](Step step, int index) {
    f.step = step;
    f.err = errno;
    f.index = index;
    (void)!::write(report_fd, &f, sizeof f);
    ::_exit(1);
  };
  if (::setns(init_pidfd, CLONE_NEWNS) != 0) fail(Step::kSetns, -1);
  if (::fchdir(root_fd) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0) fail(Step::kChroot, -1);
  for (size_t i = 0; i < mounts.size(); ++i) {
    const MountSwitch& m = mounts[i];
    const int index = static_cast<int>(i);
    if (m.replace) {
      Step failed = Step::kMove;
      if (!ReplaceMount(m, &failed)) fail(failed, index);
    } else {
      if (!MakeMountPoint(m)) fail(Step::kMountPoint, index);
      if (jail::sys::MoveMount(m.tree.get(), "", AT_FDCWD, m.jail_path.c_str(),
                               MOVE_MOUNT_F_EMPTY_PATH) != 0) {
        fail(Step::kMove, index);
      }
    }
    struct stat want, got;
    if (::fstat(m.tree.get(), &want) != 0 || ::stat(m.jail_path.c_str(), &got) != 0) {
      fail(Step::kVerify, index);
    }
    if (want.st_dev != got.st_dev || want.st_ino != got.st_ino) {
      errno = EXDEV;
      fail(Step::kVerify, index);
    }
  }
  ::_exit(0);
}

}  // namespace

std::vector<std::string> MountPointPrefixes(const std::string& path) {
  std::vector<std::string> out;
  for (size_t i = path.find('/', 1); i != std::string::npos; i = path.find('/', i + 1)) {
    out.push_back(path.substr(0, i));
  }
  out.push_back(path);
  return out;
}

Status SwitchMountsInSandbox(const SwitchTarget& target, std::vector<MountSwitch>& mounts) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, target.init_pid, 0)));
  UniqueFd root(::open(("/proc/" + std::to_string(target.init_pid) + "/root").c_str(),
                       O_PATH | O_DIRECTORY | O_CLOEXEC));
  // Checked after both are open: a recycled pid cannot have slipped in between.
  if (!pidfd || !root || !ProcessRunning(target.init_pid, target.init_start_ticks)) {
    return Error(ErrorCode::kNotFound, target.what + " is dead (its init exited)");
  }
  ASSIGN_OR_RETURN(Pipe report, MakePipe());
  UniqueFd report_read = std::move(report.read), report_write = std::move(report.write);
  const pid_t child = ::fork();
  if (child < 0) return Error::FromErrno(errno, "fork");
  if (child == 0) {
    SwitchInChild(pidfd.get(), root.get(), mounts, report_write.get());
  }
  report_write.Reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "waitpid");
  }
  ChildFailure f;
  const ssize_t n = ::read(report_read.get(), &f, sizeof f);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == 0) return Ok();
  if (n != static_cast<ssize_t>(sizeof f)) {
    return Error(ErrorCode::kInternal, target.what +
                                           ": the mount switch ended without a report (status " +
                                           std::to_string(status) + ")");
  }
  std::string what = target.what + ": ";
  if (f.index >= 0 && static_cast<size_t>(f.index) < mounts.size()) {
    what += "mount " + mounts[f.index].host_path + " at " + mounts[f.index].jail_path + ": ";
  }
  if (f.step == Step::kSeal && f.err == EBUSY) {
    return Error(ErrorCode::kFailedPrecondition, what + StepName(f.step), f.err);
  }
  return Error::FromErrno(f.err, what + StepName(f.step));
}

}  // namespace corral::runtime
