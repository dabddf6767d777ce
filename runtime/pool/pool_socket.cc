#include "runtime/pool/pool_socket.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace corral::runtime {

namespace {

Result<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return Error(ErrorCode::kInvalidArgument, "pool socket path must be 1-" +
                                                  std::to_string(sizeof addr.sun_path - 1) +
                                                  " bytes: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Whoever holds this lock may look for a live server at a path in the directory and
// replace a stale socket; held for microseconds, and released when the fd closes.
Result<UniqueFd> LockDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, "pool socket directory " + dir);
  if (::flock(fd.get(), LOCK_EX) != 0) return Error::FromErrno(errno, "flock " + dir);
  return fd;
}

// Ok if `path` is free to take: absent, or a socket nobody answers on (removed).
Status ClaimPath(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ok();
    return Error::FromErrno(errno, "pool socket " + path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Error(ErrorCode::kAlreadyExists,
                 "pool socket " + path + " exists and is not a socket; not replacing it");
  }
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!probe) return Error::FromErrno(errno, "socket");
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    return Error(ErrorCode::kAlreadyExists, "another corral pool already serves " + path);
  }
  if (errno != ECONNREFUSED) return Error::FromErrno(errno, "connect " + path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {  // stale: its server is gone
    return Error::FromErrno(errno, "remove stale pool socket " + path);
  }
  return Ok();
}

}  // namespace

Result<UniqueFd> ListenOnPoolSocket(const std::string& path) {
  ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(path));
  // Bound and listening under a private name first, then linked into place: a socket file
  // exists from bind() on, and a client connecting before listen() would be refused.
  const std::string dir = DirectoryOf(path);
  const std::string staging = dir + "/.corral-" + std::to_string(::getpid());
  auto staging_addr = AddressOf(staging);
  if (!staging_addr) {
    return Error(ErrorCode::kInvalidArgument,
                 "pool socket directory path too long to stage the socket in: " + dir);
  }
  ASSIGN_OR_RETURN(UniqueFd dir_lock, LockDirectory(dir));
  RETURN_IF_ERROR(ClaimPath(path, addr));

  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Error::FromErrno(errno, "socket");
  ::unlink(staging.c_str());  // left by a server of this pid killed mid-start
  mode_t old_mask = ::umask(0177);
  int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&*staging_addr), sizeof *staging_addr);
  int bind_errno = errno;
  ::umask(old_mask);
  if (rc != 0) return Error::FromErrno(bind_errno, "bind " + staging);
  Status placed = Ok();
  if (::listen(fd.get(), 128) != 0) {
    placed = Error::FromErrno(errno, "listen " + staging);
  } else if (::link(staging.c_str(), path.c_str()) != 0) {
    placed = Error::FromErrno(errno, "link " + staging + " to " + path);
  }
  ::unlink(staging.c_str());
  RETURN_IF_ERROR(placed);
  return fd;
}

Result<std::optional<UniqueFd>> ConnectToPoolSocket(const std::string& path) {
  ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Error::FromErrno(errno, "socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    return std::optional<UniqueFd>(std::move(fd));
  }
  if (errno == ENOENT || errno == ECONNREFUSED) return std::optional<UniqueFd>();
  return Error::FromErrno(errno, "connect " + path);
}

}  // namespace corral::runtime
