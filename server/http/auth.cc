#include "server/http/auth.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace corral::server {

bool ConstantTimeEquals(std::string_view given, std::string_view secret) {
  // Loop over the secret's length only; a length mismatch is folded into `diff` so the
  // loop runs the same way either way. volatile keeps the compiler from stopping early.
  volatile unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < secret.size(); ++i) {
    const unsigned char g =
        given.empty() ? 0 : static_cast<unsigned char>(given[i % given.size()]);
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

std::string ResolveApiKey(const std::string& configured) {
  if (!configured.empty() && configured[0] == '$') {
    const char* v = std::getenv(configured.c_str() + 1);
    return v ? v : "";
  }
  if (!configured.empty()) return configured;
  const char* v = std::getenv("CORRAL_API_KEY");
  return v ? v : "";
}

}  // namespace corral::server
