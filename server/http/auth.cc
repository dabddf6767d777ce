#include "server/http/auth.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/unique_fd.h"

namespace corral::server {

bool ConstantTimeEquals(std::string_view given, std::string_view secret) {
  // Loop over the secret's length only; a length mismatch is folded into `diff` so the
  // loop runs the same way either way. volatile keeps the compiler from stopping early.
  volatile unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < secret.size(); ++i) {
    const unsigned char g = given.empty() ? 0 : static_cast<unsigned char>(given[i % given.size()]);
    diff = diff | (g ^ static_cast<unsigned char>(secret[i]));
  }
  return diff == 0 && !secret.empty();
}

Result<std::string> RandomToken(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "getrandom");
    }
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char b : raw) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

namespace {

// The key in `path`: owner-only, at most 4 KiB, trimmed.
Result<std::string> ReadKeyFile(const std::string& path, const std::string& what) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, what + " " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, what + " " + path);
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument, what + " " + path + ": not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Error(ErrorCode::kPermissionDenied, what + " " + path + ": mode " + mode +
                                                   " lets others read the key; chmod 600 " + path);
  }
  std::string key(4097, '\0');
  ssize_t n = ::read(fd.get(), key.data(), key.size());
  if (n < 0) return Error::FromErrno(errno, what + " " + path);
  if (n > 4096) return Error(ErrorCode::kInvalidArgument, what + " " + path + ": over 4 KiB");
  key.resize(static_cast<size_t>(n));
  const char* space = " \t\r\n";
  size_t first = key.find_first_not_of(space);
  if (first == std::string::npos) return std::string();
  return key.substr(first, key.find_last_not_of(space) - first + 1);
}

}  // namespace

Result<std::string> ResolveApiKey(const std::string& configured, const std::string& key_file) {
  if (!configured.empty() && configured[0] == '$') {
    const char* v = std::getenv(configured.c_str() + 1);
    return std::string(v ? v : "");
  }
  if (!configured.empty()) return configured;
  if (!key_file.empty()) return ReadKeyFile(key_file, "server.api_key_file");
  if (const char* creds = std::getenv("CREDENTIALS_DIRECTORY"); creds != nullptr && *creds) {
    std::string path = std::string(creds) + "/corral-api-key";
    if (::access(path.c_str(), F_OK) == 0) return ReadKeyFile(path, "systemd credential");
  }
  const char* v = std::getenv("CORRAL_API_KEY");
  return std::string(v ? v : "");
}

}  // namespace corral::server
