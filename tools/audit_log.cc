#include "tools/audit_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"

namespace corral::runtime {
namespace {

std::string UtcNow() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ms));
  return buf;
}

std::string Cut(const std::string& v) {
  if (v.size() <= kAuditValueMaxChars) return v;
  size_t cut = kAuditValueMaxChars;
  while (cut > 0 && (static_cast<unsigned char>(v[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return v.substr(0, cut) + "... (" + std::to_string(v.size()) + " chars)";
}

}  // namespace

std::string RedactSecrets(std::string text, std::vector<std::string> secrets) {
  std::sort(secrets.begin(), secrets.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    size_t pos = 0;
    while ((pos = text.find(s, pos)) != std::string::npos) {
      text.replace(pos, s.size(), "[redacted]");
      pos += 10;
    }
  }
  return text;
}

AuditLog::AuditLog(std::string path, int64_t max_bytes, int keep, std::vector<std::string> secrets)
    : path_(std::move(path)), max_bytes_(max_bytes), keep_(keep), secrets_(std::move(secrets)) {}

std::string AuditLog::Format(const AuditRecord& r) const {
  nlohmann::json args = nlohmann::json::object();
  // Redact before cutting, so a secret straddling the cut cannot leak a prefix.
  for (const auto& [k, v] : r.args) args[k] = Cut(RedactSecrets(v, secrets_));
  nlohmann::json j = {{"ts", UtcNow()},
                      {"user", r.user},
                      {"thread", r.thread},
                      {"sandbox", r.sandbox_id},
                      {"tool", r.tool},
                      {"args", args},
                      {"env_names", r.env_names},
                      {"outcome", r.ok ? "ok" : "error"},
                      {"duration_ms", std::round(r.duration_ms * 1000) / 1000}};
  if (!r.ok) j["error"] = Cut(RedactSecrets(r.error, secrets_));
  j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
  j["limit"] = r.limit ? nlohmann::json(*r.limit) : nlohmann::json(nullptr);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status AuditLog::RotateIfNeeded(size_t incoming) {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return Ok();
  if (st.st_size == 0 || st.st_size + static_cast<int64_t>(incoming) <= max_bytes_) return Ok();
  for (int k = keep_ - 1; k >= 1; --k) {
    std::string from = path_ + "." + std::to_string(k);
    std::string to = path_ + "." + std::to_string(k + 1);
    ::rename(from.c_str(), to.c_str());  // missing older files are fine
  }
  if (::rename(path_.c_str(), (path_ + ".1").c_str()) != 0) {
    return Error::FromErrno(errno, "rotating " + path_);
  }
  return Ok();
}

Status AuditLog::Append(const AuditRecord& record) {
  std::string line = Format(record) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  // A lock file serialises rotation between processes sharing the log.
  UniqueFd lock_fd(::open((path_ + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock_fd) ::flock(lock_fd.get(), LOCK_EX);
  RETURN_IF_ERROR(RotateIfNeeded(line.size()));
  UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Error::FromErrno(errno, "opening audit log " + path_);
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return Error::FromErrno(errno, "writing audit log " + path_);
  }
  return Ok();
}

}  // namespace corral::runtime
