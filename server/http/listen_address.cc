#include "server/http/listen_address.h"

#include <boost/asio/ip/address.hpp>
#include <charconv>

namespace corral::server {
namespace {

Error Bad(const std::string& text, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument,
               "--listen " + text + ": " + why +
                   " (expected IP:PORT such as 127.0.0.1:8002, [::1]:8002, or unix:/PATH)");
}

std::string Authority(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

std::string ToLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string ListenAddress::ToString() const {
  return is_unix ? "unix:" + unix_path : Authority(host, port);
}

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  ListenAddress a;
  if (text.rfind("unix:", 0) == 0) {
    a.is_unix = true;
    a.loopback = true;
    a.unix_path = text.substr(5);
    if (a.unix_path.empty() || a.unix_path[0] != '/') return Bad(text, "the path must be absolute");
    if (a.unix_path.size() > 107) return Bad(text, "the path is longer than 107 bytes");
    if (a.unix_path.find('\0') != std::string::npos) return Bad(text, "NUL in the path");
    return a;
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size()) return Bad(text, "no port");
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return Bad(text, "bad port \"" + port_text + "\"");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return Bad(text, "an IPv6 address needs brackets");
  }
  if (ToLower(host) == "localhost") host = "127.0.0.1";
  boost::system::error_code error;
  auto ip = boost::asio::ip::make_address(host, error);
  if (error) return Bad(text, "\"" + host + "\" is not an IP address");
  a.host = ip.to_string();
  a.port = static_cast<uint16_t>(port);
  a.loopback = ip.is_loopback();
  a.unspecified = ip.is_unspecified();
  return a;
}

HostCheck::HostCheck(const ListenAddress& address, uint16_t bound_port,
                     const std::vector<std::string>& allowed_hosts) {
  auto add = [&](const std::string& host, uint16_t port) {
    accepted_.insert(ToLower(Authority(host, port)));
    if (port == 80)
      accepted_.insert(ToLower(host.find(':') != std::string::npos ? "[" + host + "]" : host));
  };
  if (address.is_unix) {
    accepted_.insert("localhost");
    accepted_.insert("localhost:80");
    expected_ = "localhost";
  } else if (!address.unspecified) {
    add(address.host, bound_port);
    expected_ = Authority(address.host, bound_port);
    if (address.loopback) {
      for (const char* h : {"localhost", "127.0.0.1", "::1"}) add(h, bound_port);
    }
  }
  for (const std::string& h : allowed_hosts) {
    accepted_.insert(ToLower(h));
    if (expected_.empty()) expected_ = h;
  }
}

bool HostCheck::Accepts(std::string_view host_header) const {
  while (!host_header.empty() && (host_header.front() == ' ' || host_header.front() == '\t')) {
    host_header.remove_prefix(1);
  }
  while (!host_header.empty() && (host_header.back() == ' ' || host_header.back() == '\t')) {
    host_header.remove_suffix(1);
  }
  return accepted_.count(ToLower(host_header)) > 0;
}

}  // namespace corral::server
