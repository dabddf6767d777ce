// Raw wrappers for syscalls that glibc 2.36 lacks or declares in headers that clash with
// <linux/mount.h>. Async-signal-safe: each is one syscall.
#pragma once

#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace corral::jail::sys {

inline int OpenTree(int dirfd, const char* path, unsigned flags) {
  return static_cast<int>(::syscall(SYS_open_tree, dirfd, path, flags));
}

inline int MoveMount(int from_dirfd, const char* from_path, int to_dirfd, const char* to_path,
                     unsigned flags) {
  return static_cast<int>(
      ::syscall(SYS_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags));
}

inline int FsOpen(const char* fs_name, unsigned flags) {
  return static_cast<int>(::syscall(SYS_fsopen, fs_name, flags));
}

inline int FsConfig(int fd, unsigned cmd, const char* key, const void* value, int aux) {
  return static_cast<int>(::syscall(SYS_fsconfig, fd, cmd, key, value, aux));
}

inline int FsMount(int fd, unsigned flags, unsigned attr_flags) {
  return static_cast<int>(::syscall(SYS_fsmount, fd, flags, attr_flags));
}

// `propagation`: 0 (unchanged) or MS_PRIVATE / MS_SLAVE / MS_SHARED.
inline int MountSetattr(int dirfd, const char* path, unsigned flags, uint64_t set, uint64_t clear,
                        uint64_t propagation = 0) {
  mount_attr attr{};
  attr.attr_set = set;
  attr.attr_clr = clear;
  attr.propagation = propagation;
  return static_cast<int>(::syscall(SYS_mount_setattr, dirfd, path, flags, &attr, sizeof attr));
}

// Gives a detached mount the id mapping of the user namespace `userns_fd` (its maps say
// which ids on disk show as which): MOUNT_ATTR_IDMAP, once per mount, before it is attached.
inline int MountSetattrIdmap(int dirfd, const char* path, unsigned flags, int userns_fd) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  return static_cast<int>(::syscall(SYS_mount_setattr, dirfd, path, flags, &attr, sizeof attr));
}

inline int PivotRoot(const char* new_root, const char* put_old) {
  return static_cast<int>(::syscall(SYS_pivot_root, new_root, put_old));
}

inline int CloseRange(unsigned first, unsigned last, unsigned flags) {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}

inline int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

}  // namespace corral::jail::sys
