#include "jail/image_mount.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

#include "base/files.h"
#include "jail/syscalls.h"

namespace corral::jail {

namespace {

// How often a free device is asked for again when another process configured it first.
constexpr int kLoopAttempts = 16;

// A free loop device with `image` behind it, clearing itself once nothing holds it: the
// returned fd, then the mount, are what hold it.
Result<std::pair<UniqueFd, std::string>> AttachLoop(int image_fd, const std::string& image,
                                                    bool read_only) {
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) return Error::FromErrno(errno, "/dev/loop-control (volumes with a size need it)");
  for (int attempt = 0; attempt < kLoopAttempts; ++attempt) {
    const int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return Error::FromErrno(errno, "a free loop device for " + image);
    const std::string device = "/dev/loop" + std::to_string(n);
    UniqueFd loop(::open(device.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC));
    if (!loop) return Error::FromErrno(errno, device);
    loop_config config{};
    config.fd = static_cast<__u32>(image_fd);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR | (read_only ? LO_FLAGS_READ_ONLY : 0);
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) {
      return std::make_pair(std::move(loop), device);
    }
    if (errno != EBUSY) return Error::FromErrno(errno, "attach " + image + " to " + device);
    // Taken between GET_FREE and CONFIGURE by someone else: ask again.
  }
  return Error(ErrorCode::kIo, "no free loop device for " + image + " after " +
                                   std::to_string(kLoopAttempts) + " attempts");
}

// A failed fsconfig's error, with the kernel's own words when it left some on the
// context ("e ext4: ..."), which say more than errno.
Error FsConfigError(int fs, int err, const std::string& what) {
  char message[256];
  const ssize_t n = ::read(fs, message, sizeof message - 1);
  const std::string why = n > 0 ? ": " + std::string(message, static_cast<size_t>(n)) : "";
  return Error::FromErrno(err, what + why);
}

}  // namespace

Result<UniqueFd> PrepareImageTree(const std::string& image, bool read_only) {
  UniqueFd image_fd(
      ::open(image.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW));
  if (!image_fd) return Error::FromErrno(errno, image);
  ASSIGN_OR_RETURN(auto attached, AttachLoop(image_fd.get(), image, read_only));
  const std::string& device = attached.second;
  UniqueFd fs(sys::FsOpen("ext4", FSOPEN_CLOEXEC));
  if (!fs) return Error::FromErrno(errno, "fsopen ext4 (for " + image + ")");
  if (sys::FsConfig(fs.get(), FSCONFIG_SET_STRING, "source", device.c_str(), 0) != 0 ||
      (read_only && sys::FsConfig(fs.get(), FSCONFIG_SET_FLAG, "ro", nullptr, 0) != 0) ||
      sys::FsConfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return FsConfigError(fs.get(), errno, "mount the ext4 image " + image + " (" + device + ")");
  }
  uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (read_only) attrs |= MOUNT_ATTR_RDONLY;
  UniqueFd tree(sys::FsMount(fs.get(), FSMOUNT_CLOEXEC, static_cast<unsigned>(attrs)));
  if (!tree) return Error::FromErrno(errno, "fsmount " + image);
  // As PrepareBindTree's: nothing mounted beneath it in the jail propagates anywhere.
  if (sys::MountSetattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, 0, 0, MS_PRIVATE) != 0) {
    return Error::FromErrno(errno, "make the mount of " + image + " private");
  }
  return tree;  // the loop fd closes here; the mount holds the device from now on
}

namespace {

// The lower layers, one "lowerdir+" each (Linux 6.8 and later: any path), else as one
// "lowerdir" list, its ':' and '\\' escaped as overlayfs reads them.
Status SetLowerDirs(int fs, const std::vector<std::string>& lowers) {
  bool one_by_one = true;
  for (const std::string& dir : lowers) {
    if (sys::FsConfig(fs, FSCONFIG_SET_STRING, "lowerdir+", dir.c_str(), 0) == 0) continue;
    if (errno != EINVAL || &dir != &lowers.front()) {
      return Error::FromErrno(errno, "overlay lowerdir+=" + dir);
    }
    one_by_one = false;  // a kernel before 6.8
    break;
  }
  if (one_by_one) return Ok();
  std::string list;
  for (const std::string& dir : lowers) {
    if (!list.empty()) list += ':';
    for (char c : dir) {
      if (c == ':' || c == '\\') list += '\\';
      list += c;
    }
  }
  if (sys::FsConfig(fs, FSCONFIG_SET_STRING, "lowerdir", list.c_str(), 0) != 0) {
    return Error::FromErrno(errno, "overlay lowerdir=" + list);
  }
  return Ok();
}

}  // namespace

Result<UniqueFd> PrepareOverlayTree(const std::vector<std::string>& lowers,
                                    const std::string& upper, const std::string& work) {
  if (lowers.empty()) return Error(ErrorCode::kInvalidArgument, "an overlay needs a lower layer");
  const std::string& lower = lowers.back();  // the host's directory, for messages
  UniqueFd fs(sys::FsOpen("overlay", FSOPEN_CLOEXEC));
  if (!fs) return Error::FromErrno(errno, "fsopen overlay (for " + lower + ")");
  RETURN_IF_ERROR(SetLowerDirs(fs.get(), lowers));
  const std::pair<const char*, const std::string*> dirs[] = {{"upperdir", &upper},
                                                             {"workdir", &work}};
  for (const auto& [key, value] : dirs) {
    if (sys::FsConfig(fs.get(), FSCONFIG_SET_STRING, key, value->c_str(), 0) != 0) {
      return Error::FromErrno(errno, std::string("overlay ") + key + "=" + *value);
    }
  }
  for (const char* off : {"redirect_dir", "metacopy"}) {
    // Older kernels without the option are fine: off is their only behaviour.
    (void)sys::FsConfig(fs.get(), FSCONFIG_SET_STRING, off, "off", 0);
  }
  if (sys::FsConfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return FsConfigError(fs.get(), errno, "mount an overlay of " + lower);
  }
  UniqueFd tree(sys::FsMount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!tree) return Error::FromErrno(errno, "fsmount overlay of " + lower);
  if (sys::MountSetattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, 0, 0, MS_PRIVATE) != 0) {
    return Error::FromErrno(errno, "make the overlay of " + lower + " private");
  }
  return tree;
}

std::vector<std::string> LoopDevicesOf(const std::string& image, bool* any_writable) {
  std::vector<std::string> out;
  *any_writable = false;
  char real[PATH_MAX];
  if (::realpath(image.c_str(), real) == nullptr) return out;
  DIR* dir = ::opendir("/sys/block");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind("loop", 0) != 0) continue;
    auto backing = ReadFile("/sys/block/" + name + "/loop/backing_file");
    if (!backing) continue;  // not attached
    std::string path = *backing;
    while (!path.empty() && path.back() == '\n') path.pop_back();
    if (path != real) continue;
    auto ro = ReadFile("/sys/block/" + name + "/ro");
    const bool writable = !ro || ro->rfind("1", 0) != 0;
    *any_writable = *any_writable || writable;
    out.push_back("/dev/" + name + (writable ? " (rw)" : " (ro)"));
  }
  ::closedir(dir);
  return out;
}

}  // namespace corral::jail
