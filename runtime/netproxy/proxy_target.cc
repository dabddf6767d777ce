#include "runtime/netproxy/proxy_target.h"

#include <algorithm>
#include <cctype>

namespace corral::runtime::net {
namespace {

Error Invalid(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

std::optional<uint16_t> ParsePort(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  uint32_t port = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

}  // namespace

Result<HostPort> ParseAuthority(std::string_view authority, std::optional<uint16_t> default_port) {
  if (authority.find('@') != std::string_view::npos)
    return Invalid("userinfo ('@') is not accepted");
  HostPort out;
  std::string_view rest;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return Invalid("'[' without ']' in '" + std::string(authority) + "'");
    out.host = std::string(authority.substr(1, close - 1));
    rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return Invalid("junk after ']' in '" + std::string(authority) + "'");
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) rest = authority.substr(colon);
    if (out.host.find(':') != std::string::npos) return Invalid("an IPv6 address needs brackets");
  }
  if (out.host.empty()) return Invalid("no host in '" + std::string(authority) + "'");
  if (rest.empty()) {
    if (!default_port) return Invalid("no port in '" + std::string(authority) + "'");
    out.port = *default_port;
    return out;
  }
  std::optional<uint16_t> port = ParsePort(rest.substr(1));
  if (!port) return Invalid("port must be 1-65535 in '" + std::string(authority) + "'");
  out.port = *port;
  return out;
}

Result<ForwardTarget> ParseForwardTarget(std::string_view target) {
  if (StartsWithNoCase(target, "https://")) return Invalid("https:// requests go through CONNECT");
  if (!StartsWithNoCase(target, "http://")) {
    return Invalid("not an absolute http:// URI (this is a proxy; set it as http_proxy)");
  }
  std::string_view rest = target.substr(7);
  rest = rest.substr(0, rest.find('#'));
  const size_t path_start = rest.find_first_of("/?");
  ForwardTarget out;
  out.authority = std::string(rest.substr(0, path_start));
  ASSIGN_OR_RETURN(out.endpoint, ParseAuthority(out.authority, 80));
  out.origin_form =
      path_start == std::string_view::npos ? "/" : std::string(rest.substr(path_start));
  if (out.origin_form.front() == '?') out.origin_form.insert(0, "/");
  return out;
}

}  // namespace corral::runtime::net
