#include "runtime/run/id_mapped_mount.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/fd_pair.h"
#include "jail/syscalls.h"

namespace corral::runtime {

namespace {

// Writes a whole id map in one write, as the kernel wants it.
Status WriteIdMap(const std::string& path, const std::string& map) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || ::write(fd.get(), map.data(), map.size()) != static_cast<ssize_t>(map.size())) {
    return Error::FromErrno(errno, "write " + path);
  }
  return Ok();
}

}  // namespace

Result<UniqueFd> IdmapUserNamespace(uid_t disk_uid, gid_t disk_gid, uid_t shown_uid,
                                    gid_t shown_gid) {
  ASSIGN_OR_RETURN(Pipe ready, MakePipe());
  ASSIGN_OR_RETURN(Pipe release, MakePipe());
  const pid_t child = ::fork();
  if (child < 0) return Error::FromErrno(errno, "fork");
  if (child == 0) {  // a copy of a multithreaded process: syscalls only
    ::close(ready.read.get());
    ::close(release.write.get());  // else its own copy would keep the read below waiting
    char byte = ::unshare(CLONE_NEWUSER) == 0 ? 1 : 0;
    (void)!::write(ready.write.get(), &byte, 1);
    // Until the parent says so (or is gone): it needs the namespace alive to open it.
    (void)!::read(release.read.get(), &byte, 1);
    ::_exit(0);
  }
  ready.write.Reset();
  release.read.Reset();
  auto reap = [&] {
    // A byte, not only the close: a fork elsewhere in this process may hold the write end.
    const char go = 1;
    (void)!::write(release.write.get(), &go, 1);
    release.write.Reset();
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  };
  char byte = 0;
  if (::read(ready.read.get(), &byte, 1) != 1 || byte != 1) {
    reap();
    return Error(ErrorCode::kUnsupported, "a user namespace for an id mapping: unshare failed");
  }
  const std::string proc = "/proc/" + std::to_string(child);
  Status st = WriteIdMap(proc + "/uid_map", "0 0 1\n" + std::to_string(disk_uid) + " " +
                                                std::to_string(shown_uid) + " 1\n");
  if (st) {
    st = WriteIdMap(proc + "/gid_map", "0 0 1\n" + std::to_string(disk_gid) + " " +
                                           std::to_string(shown_gid) + " 1\n");
  }
  UniqueFd ns;
  if (st) {
    ns = UniqueFd(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns) st = Error::FromErrno(errno, proc + "/ns/user");
  }
  reap();
  if (!st) return st.error();
  return ns;
}

Status IdmapTree(int tree, uid_t disk_uid, gid_t disk_gid, uid_t shown_uid, gid_t shown_gid,
                 const std::string& what) {
  ASSIGN_OR_RETURN(UniqueFd ns, IdmapUserNamespace(disk_uid, disk_gid, shown_uid, shown_gid));
  if (jail::sys::MountSetattrIdmap(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, ns.get()) != 0) {
    return Error::FromErrno(errno, "an id-mapped mount of " + what +
                                       " (its file system must support id-mapped mounts)");
  }
  return Ok();
}

}  // namespace corral::runtime
