#include "base/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/unique_fd.h"

namespace corral {

Result<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, path);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, path);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status WriteFile(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, path);
  ssize_t n;
  do {
    n = ::write(fd.get(), content.data(), content.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Error::FromErrno(errno, "writing '" + Trim(content) + "' to " + path);
  if (static_cast<size_t>(n) != content.size()) {
    return Error(ErrorCode::kIo, "short write to " + path);
  }
  return Ok();
}

Status WriteFileWhole(const std::string& path, const std::string& content, int mode) {
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, mode));
  if (!fd) return Error::FromErrno(errno, tmp);
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno(n < 0 ? errno : EIO, "write " + tmp);
    done += static_cast<size_t>(n);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Error::FromErrno(errno, "rename " + tmp);
  return Ok();
}

Result<long long> ReadInt(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  text = Trim(text);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0') {
    return Error(ErrorCode::kIo, path + ": not an integer: '" + text + "'");
  }
  return v;
}

std::string Trim(const std::string& s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

}  // namespace corral
