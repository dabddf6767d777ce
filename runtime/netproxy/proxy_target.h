// Where an HTTP proxy request wants to go: the authority of a CONNECT ("host:port") and the
// absolute-form URI of a forwarded request ("http://host[:port]/path?query"). Pure.
// (Boost 1.74 has no URL parser; this covers the two forms a proxy accepts, nothing else.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::runtime::net {

struct HostPort {
  std::string host;  // as written, without the brackets of an IPv6 literal
  uint16_t port = 0;
};

// "host:port", "[v6]:port"; without a port only when `default_port` is given. No userinfo.
Result<HostPort> ParseAuthority(std::string_view authority, std::optional<uint16_t> default_port);

struct ForwardTarget {
  HostPort endpoint;
  std::string authority;    // "host[:port]" as written: the Host header sent upstream
  std::string origin_form;  // "/path?query" ("/" when the URI has no path)
};

// An absolute-form `http://` request target. https:// (use CONNECT), origin-form ("/x":
// the client took the proxy for the server) and userinfo are refused with a reason.
Result<ForwardTarget> ParseForwardTarget(std::string_view target);

}  // namespace corral::runtime::net
