#include "runtime/sandboxes/copy_host.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>

#include "base/scope_guard.h"
#include "base/unique_fd.h"
#include "jail/hardening.h"

namespace corral::runtime::copy_internal {

namespace {

constexpr char kInner[] = "x";  // tar's directory inside the private one

Error Io(const std::string& what, int err) { return Error::FromErrno(err, what); }

std::string JoinShown(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// Where the copied entry goes: into `dir` as `name`, or (name empty) its contents merged
// into `dir` itself.
struct HostTarget {
  UniqueFd dir;
  std::string name;
  std::string shown;      // host path of `dir`, for messages
  bool make_dir = false;  // contents of a directory into `name`, which does not exist yet
};

Result<UniqueFd> OpenDir(const std::string& path, const std::string& shown) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Io(shown, errno);
  return fd;
}

std::pair<std::string, std::string> ParentAndName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// docker cp's rules: into DST when it is a directory, else DST names the copy, whose
// directory must exist. The user's own path is followed as typed.
Result<HostTarget> ResolveHostTarget(const CopyPath& source, const std::string& dst) {
  HostTarget t;
  struct stat st {};
  if (::stat(dst.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ASSIGN_OR_RETURN(t.dir, OpenDir(dst, dst));
      t.shown = dst;
      if (!source.contents) t.name = source.base;
      return t;
    }
    if (source.contents || source.trailing_slash) {
      return Error(ErrorCode::kInvalidArgument,
                   dst + ": not a directory (a directory's contents go into a directory)");
    }
  } else if (errno != ENOENT) {
    return Io(dst, errno);
  } else if (dst.back() == '/') {
    return Error(ErrorCode::kNotFound, dst + ": destination directory does not exist");
  }
  auto [parent, name] = ParentAndName(dst);
  if (name == "." || name == "..") {
    return Error(ErrorCode::kInvalidArgument, dst + ": name the destination itself");
  }
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Error(ErrorCode::kNotFound,
                 dst + ": destination directory " + parent + " does not exist");
  }
  ASSIGN_OR_RETURN(t.dir, OpenDir(parent, parent));
  t.shown = parent;
  t.name = name;
  t.make_dir = source.contents;
  return t;
}

// A directory only root can enter, made in the destination's directory (for rename),
// holding tar's directory `x`: the sandbox cannot reach into it, whatever modes the
// archive gives `x` and below.
struct Staging {
  int parent = -1;  // not owned
  std::string name;
  dev_t dev = 0;
  ino_t ino = 0;
  UniqueFd outer;
  UniqueFd inner;
};

Result<Staging> MakeStaging(int parent, const std::string& shown) {
  Staging s;
  s.parent = parent;
  std::random_device random;
  for (int attempt = 0;; ++attempt) {
    char name[32];
    std::snprintf(name, sizeof name, ".corral-cp-%08x", static_cast<unsigned>(random()));
    if (::mkdirat(parent, name, 0700) == 0) {
      s.name = name;
      break;
    }
    if (errno != EEXIST || attempt == 16) return Io(JoinShown(shown, name), errno);
  }
  // Opened without following: a name the sandbox swapped in is not ours (owner, mode).
  s.outer.Reset(::openat(parent, s.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!s.outer || ::fstat(s.outer.get(), &st) != 0 || st.st_uid != ::geteuid() ||
      (st.st_mode & 07777) != 0700) {
    return Error(ErrorCode::kIo, JoinShown(shown, s.name) + ": staging directory was replaced");
  }
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  if (::mkdirat(s.outer.get(), kInner, 0700) != 0) return Io(JoinShown(shown, s.name), errno);
  s.inner.Reset(::openat(s.outer.get(), kInner, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!s.inner) return Io(JoinShown(shown, s.name), errno);
  return s;
}

// Removes everything below `dir` (an fd inside the private staging directory).
void RemoveBelow(int dir) {
  int fd = ::dup(dir);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  ::rewinddir(d);
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (::unlinkat(dir, name.c_str(), 0) == 0) continue;
    UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) continue;
    ::fchmod(sub.get(), 0700);  // a read-only directory from the archive
    RemoveBelow(sub.get());
    ::unlinkat(dir, name.c_str(), AT_REMOVEDIR);
  }
  ::closedir(d);
}

void RemoveStaging(Staging& s) {
  if (!s.outer) return;
  RemoveBelow(s.outer.get());
  struct stat st {};
  // Only if the name still is ours (the sandbox may have renamed it in a shared directory).
  if (::fstatat(s.parent, s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == s.dev &&
      st.st_ino == s.ino) {
    ::unlinkat(s.parent, s.name.c_str(), AT_REMOVEDIR);
  }
}

// Lists a directory's entries (an fd inside the private staging directory).
Result<std::vector<std::string>> Entries(int dir, const std::string& shown) {
  int fd = ::dup(dir);
  if (fd < 0) return Io(shown, errno);
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return Io(shown, errno);
  }
  ::rewinddir(d);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

// Refuses device nodes and clears set-uid/set-gid bits below `dir`, which only we can
// reach: nothing changes between the stat and the chmod.
Status Sanitize(int dir, const std::string& shown) {
  ASSIGN_OR_RETURN(auto names, Entries(dir, shown));
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return Io(JoinShown(shown, name), errno);
    }
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      return Error(ErrorCode::kPermissionDenied,
                   JoinShown(shown, name) + ": the archive holds a device node (refused)");
    }
    if ((S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) && (st.st_mode & (S_ISUID | S_ISGID))) {
      if (::fchmodat(dir, name.c_str(), st.st_mode & 01777, 0) != 0) {
        return Io(JoinShown(shown, name), errno);
      }
    }
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) return Io(JoinShown(shown, name), errno);
      RETURN_IF_ERROR(Sanitize(sub.get(), JoinShown(shown, name)));
    }
  }
  return Ok();
}

// Moves `from_dir/name` to `to_dir/to_name`: renamed when nothing is there, merged into a
// directory that is there, replacing a non-directory. `to_dir` may be writable by the
// sandbox: nothing there is followed (O_NOFOLLOW, renameat replaces a symlink itself).
Status MoveInto(int from_dir, const std::string& name, int to_dir, const std::string& to_name,
                const std::string& shown) {
  struct stat src {};
  if (::fstatat(from_dir, name.c_str(), &src, AT_SYMLINK_NOFOLLOW) != 0) return Io(shown, errno);
  for (int attempt = 0; attempt < 8; ++attempt) {
    struct stat dst {};
    if (::fstatat(to_dir, to_name.c_str(), &dst, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return Io(shown, errno);
      if (::renameat2(from_dir, name.c_str(), to_dir, to_name.c_str(), RENAME_NOREPLACE) == 0) {
        return Ok();
      }
      if (errno == EEXIST) continue;  // it appeared meanwhile: look again
      return Io(shown, errno);
    }
    if (S_ISDIR(src.st_mode) != S_ISDIR(dst.st_mode)) {
      return Error(
          ErrorCode::kAlreadyExists,
          shown + (S_ISDIR(dst.st_mode) ? ": cannot overwrite a directory with a non-directory"
                                        : ": cannot overwrite a non-directory with a directory"));
    }
    if (!S_ISDIR(src.st_mode)) {
      if (::renameat(from_dir, name.c_str(), to_dir, to_name.c_str()) == 0) return Ok();
      return Io(shown, errno);
    }
    UniqueFd from(
        ::openat(from_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd to(::openat(to_dir, to_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!from || !to) return Io(shown, errno);
    ASSIGN_OR_RETURN(auto names, Entries(from.get(), shown));
    for (const std::string& child : names) {
      RETURN_IF_ERROR(MoveInto(from.get(), child, to.get(), child, JoinShown(shown, child)));
    }
    return Ok();
  }
  return Error(ErrorCode::kIo, shown + ": kept changing while it was copied");
}

// Moves what tar extracted (in s.inner) to the target.
Status Place(const CopyPath& source, Staging& s, HostTarget& t) {
  if (!source.contents) {
    ASSIGN_OR_RETURN(auto names, Entries(s.inner.get(), t.shown));
    if (names.size() != 1 || names[0] != source.base) {
      return Error(ErrorCode::kPermissionDenied,
                   "the archive from the sandbox holds other entries than '" + source.base +
                       "' (refused; nothing was copied)");
    }
    return MoveInto(s.inner.get(), source.base, t.dir.get(), t.name, JoinShown(t.shown, t.name));
  }
  if (t.make_dir) {
    // The directory tar extracted into becomes the copy (with the mode the archive gave it).
    return MoveInto(s.outer.get(), kInner, t.dir.get(), t.name, JoinShown(t.shown, t.name));
  }
  ASSIGN_OR_RETURN(auto names, Entries(s.inner.get(), t.shown));
  for (const std::string& name : names) {
    RETURN_IF_ERROR(MoveInto(s.inner.get(), name, t.dir.get(), name, JoinShown(t.shown, name)));
  }
  return Ok();
}

const char* HostTarPath() {
  return ::access("/usr/bin/tar", X_OK) == 0 ? "/usr/bin/tar" : "/bin/tar";
}

}  // namespace

Result<pid_t> StartHostTar(const std::vector<std::string>& args, int stdin_fd, int stdout_fd,
                           int cwd_fd, bool unprivileged, int stderr_fd) {
  const char* tar = HostTarPath();
  if (::access(tar, X_OK) != 0) {
    return Error(ErrorCode::kUnsupported, "corral cp needs GNU tar on the host (/usr/bin/tar)");
  }
  std::vector<const char*> argv{"tar"};
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return Io("/dev/null", errno);
  int in = stdin_fd >= 0 ? stdin_fd : dev_null.get();
  int out = stdout_fd >= 0 ? stdout_fd : dev_null.get();
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Io("fork", errno);
  if (pid == 0) {
    // Child: syscalls only.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(126);
    if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0) ::_exit(126);
    if (stderr_fd >= 0 && ::dup2(stderr_fd, 2) < 0) ::_exit(126);
    if (cwd_fd >= 0 && ::fchdir(cwd_fd) != 0) ::_exit(126);
    if (unprivileged) {
      bool root = ::geteuid() == 0;  // anyone else has no capabilities to drop
      if ((root && (!jail::LockSecurebitsAndDropBounding(-1) || !jail::ClearCapabilities(-1))) ||
          ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        ::_exit(126);
      }
    }
    ::execv(tar, const_cast<char* const*>(argv.data()));
    ::_exit(127);
  }
  return pid;
}

void CopyToStderr(int fd) {
  char buf[4096];
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n <= 0) return;
    offset += n;
    if (::write(2, buf, static_cast<size_t>(n)) != n) return;
  }
}

Result<int> WaitHostTar(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Io("waitpid", errno);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

Status ExtractToHost(const CopyPath& source, const std::string& host_dst,
                     const ArchiveProducer& produce, int archive_fd) {
  ASSIGN_OR_RETURN(HostTarget target, ResolveHostTarget(source, host_dst));
  ASSIGN_OR_RETURN(Staging staging, MakeStaging(target.dir.get(), target.shown));
  ScopeGuard cleanup([&] { RemoveStaging(staging); });
  UniqueFd read_end, write_end;
  if (produce) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Io("pipe", errno);
    read_end.Reset(fds[0]);
    write_end.Reset(fds[1]);
    archive_fd = read_end.get();
  }
  // tar's complaints are shown only when the sandbox's side succeeded: when it failed,
  // its own error says why, and "This does not look like a tar archive" would not.
  UniqueFd tar_errors(::memfd_create("corral-cp-tar-stderr", MFD_CLOEXEC));
  if (!tar_errors) return Io("memfd_create", errno);
  // --no-same-owner: the copy is ours (docker cp: the invoking user's). Without
  // capabilities tar can make no device nodes and chown nothing.
  ASSIGN_OR_RETURN(pid_t tar,
                   StartHostTar({"-x", "-f", "-", "--no-same-owner", "--no-overwrite-dir"},
                                archive_fd, -1, staging.inner.get(), true, tar_errors.get()));
  read_end.Reset();
  Status produced = Ok();
  if (produce) {
    produced = produce(write_end.get());
    write_end.Reset();  // EOF for tar
  }
  ASSIGN_OR_RETURN(int tar_status, WaitHostTar(tar));
  RETURN_IF_ERROR(produced);
  CopyToStderr(tar_errors.get());
  if (tar_status != 0) {
    return Error(ErrorCode::kIo, "extracting into " + host_dst + " failed (tar exited with " +
                                     std::to_string(tar_status) +
                                     ", its message is above); nothing was copied");
  }
  // tar may have given its directory any mode; only we may enter the one above it.
  RETURN_IF_ERROR(Sanitize(staging.inner.get(), host_dst));
  struct stat st {};
  if (::fstat(staging.inner.get(), &st) != 0) return Io(host_dst, errno);
  if (::fchmod(staging.inner.get(), st.st_mode & 01777) != 0) return Io(host_dst, errno);
  return Place(source, staging, target);
}

}  // namespace corral::runtime::copy_internal
