#include "server/http/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

namespace corral::server {
namespace {

std::string UtcNow() {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ms));
  return buf;
}

}  // namespace

Result<std::unique_ptr<AccessLog>> AccessLog::Open(const std::string& where) {
  if (where == "off") return std::unique_ptr<AccessLog>(new AccessLog(nullptr, false));
  if (where.empty()) return std::unique_ptr<AccessLog>(new AccessLog(stderr, false));
  int fd = ::open(where.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error::FromErrno(errno, "access log " + where);
  std::FILE* f = ::fdopen(fd, "a");
  if (f == nullptr) {
    int err = errno;
    ::close(fd);
    return Error::FromErrno(err, "access log " + where);
  }
  return std::unique_ptr<AccessLog>(new AccessLog(f, true));
}

AccessLog::~AccessLog() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

void AccessLog::Write(const AccessRecord& r) {
  if (file_ == nullptr) return;
  nlohmann::json line = {{"time", UtcNow()},
                         {"client", r.client},
                         {"method", r.method},
                         {"route", r.route},
                         {"status", r.status},
                         {"bytes", r.bytes},
                         {"ms", static_cast<double>(static_cast<int64_t>(r.ms * 1000)) / 1000}};
  if (!r.sandbox_id.empty()) line["sandbox_id"] = r.sandbox_id;
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace corral::server
