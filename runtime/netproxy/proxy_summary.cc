#include "runtime/netproxy/proxy_summary.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"

namespace corral::runtime::net {

void ProxyStats::Count(const Decision& decision) {
  dirty_ = true;
  if (decision.via != "dns") ++connections_;
  if (decision.allowed) {
    if (decision.via != "dns") ++allowed_;
    return;
  }
  AddDenied(decision);
}

void ProxyStats::CountLateDenial(const Decision& decision) {
  dirty_ = true;
  AddDenied(decision);
}

void ProxyStats::AddDenied(const Decision& decision) {
  ++denied_count_;
  if (denied_.size() >= kMaxDeniedListed) return;
  for (const Decision& d : denied_) {
    if (d.host == decision.host && d.port == decision.port && d.via == decision.via &&
        d.reason == decision.reason) {
      return;
    }
  }
  denied_.push_back(decision);
}

void ProxyStats::AddBytes(uint64_t out, uint64_t in) {
  if (out == 0 && in == 0) return;
  dirty_ = true;
  bytes_out_ += out;
  bytes_in_ += in;
}

nlohmann::json ProxyStats::ToJson() const {
  nlohmann::json denied = nlohmann::json::array();
  for (const Decision& d : denied_) {
    denied.push_back({{"host", d.host}, {"port", d.port}, {"reason", d.reason}, {"via", d.via}});
  }
  return {{"mode", "allowlist"},           {"connections", connections_}, {"allowed", allowed_},
          {"denied_count", denied_count_}, {"denied", std::move(denied)}, {"bytes_out", bytes_out_},
          {"bytes_in", bytes_in_}};
}

Status ProxyStats::WriteTo(const std::string& path) {
  const std::string text =
      ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string temp = path + ".tmp";
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd) return Error::FromErrno(errno, "writing the summary " + temp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Error error = Error::FromErrno(n < 0 ? errno : EIO, "writing the summary " + temp);
      ::unlink(temp.c_str());
      return error;
    }
    done += static_cast<size_t>(n);
  }
  fd.Reset();
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Error error = Error::FromErrno(errno, "renaming " + temp + " to " + path);
    ::unlink(temp.c_str());
    return error;
  }
  dirty_ = false;
  return Ok();
}

}  // namespace corral::runtime::net
