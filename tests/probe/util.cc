#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "tests/probe/json_writer.h"
#include "tests/probe/probe.h"

namespace corral::probe {

int ReadWholeFile(const std::string& path, std::string* out) {
  out->clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return err;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return 0;
}

bool ParseNumber(const std::string& s, long long* out) {
  if (s.empty() || s.size() > 18) return false;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

int UsageError(const std::string& message) {
  JsonWriter j;
  j.BeginObject().Field("error", "usage").Field("message", message).EndObject();
  PrintJson(j);
  return 2;
}

void SleepSeconds(double seconds) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

}  // namespace corral::probe
