#include "runtime/netproxy/proxy_log.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

namespace corral::runtime::net {

std::string IsoTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm utc {};
  ::gmtime_r(&seconds, &utc);
  char text[96];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms % 1000));
  return text;
}

Result<DecisionLog> DecisionLog::Open(const std::string& path, std::string sandbox) {
  if (path.empty()) return DecisionLog(UniqueFd(), std::move(sandbox));
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd) return Error::FromErrno(errno, "opening the log " + path);
  return DecisionLog(std::move(fd), std::move(sandbox));
}

void DecisionLog::Record(const Decision& d) {
  nlohmann::json line = {{"time", IsoTimeNow()}, {"sandbox", sandbox_},
                         {"via", d.via},         {"host", d.host},
                         {"port", d.port},       {"decision", d.allowed ? "allow" : "deny"}};
  if (d.allowed) {
    line["address"] = d.address;
  } else {
    line["reason"] = d.reason;
  }
  // Names come from the jail: "replace" keeps a line valid JSON whatever bytes they hold.
  WriteLine(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void DecisionLog::Record(const ConnectionEnd& e) {
  nlohmann::json line = {{"time", IsoTimeNow()},   {"sandbox", sandbox_},
                         {"event", "close"},       {"via", e.via},
                         {"host", e.host},         {"port", e.port},
                         {"address", e.address},   {"bytes_out", e.bytes_out},
                         {"bytes_in", e.bytes_in}, {"duration_ms", e.duration_ms}};
  if (!e.reason.empty()) line["reason"] = e.reason;
  WriteLine(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void DecisionLog::WriteLine(const std::string& text) {
  if (!fd_) return;
  const std::string line = text + "\n";
  // O_APPEND and one write per line: lines never interleave or tear.
  ssize_t n;
  do {
    n = ::write(fd_.get(), line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(line.size()) && !warned_) {
    warned_ = true;
    spdlog::error("decisions log: write failed: {}", n < 0 ? std::strerror(errno) : "short write");
  }
}

}  // namespace corral::runtime::net
