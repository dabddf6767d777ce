// The allow-list's rule grammar and the address facts it needs: a rule as written in
// network.allow / network.deny (syntax in policy.h), IP addresses and networks, host-name
// normalization, the ranges never reached. Pure logic on strings and bytes: no sockets, no
// resolution, no spec. Its own library (corral::net_rules) so that the spec's validation
// (runtime/spec) and the proxy's wire parsers (runtime/netproxy) use it without linking the
// policy or the proxy launcher: runtime_spec -> net_rules <- runtime_net, no cycle.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::runtime::net {

// The ports a rule without a port allows.
inline constexpr uint16_t kWebPorts[] = {80, 443};

// An IPv4 or IPv6 address. IPv4 is kept as such (family 4); an IPv4-mapped IPv6 address
// (::ffff:a.b.c.d) is classified as the IPv4 address it carries.
struct IpAddress {
  int family = 4;                   // 4 or 6
  std::array<uint8_t, 16> bytes{};  // IPv4: the first 4

  static std::optional<IpAddress> Parse(std::string_view text);
  std::string ToString() const;
  bool operator==(const IpAddress&) const = default;
};

struct IpNetwork {
  IpAddress base;
  int prefix = 0;
  bool Contains(const IpAddress& a) const;
};

struct Rule {
  enum class Kind { kName, kSubdomains, kAnyName, kCidr };
  Kind kind = Kind::kName;
  std::string name;              // kName: "pypi.org"; kSubdomains: "github.com"
  IpNetwork network;             // kCidr
  std::optional<uint16_t> port;  // unset: 80 and 443 (or any port with any_port)
  bool any_port = false;
  std::string text;  // as written, for messages and logs

  bool MatchesPort(uint16_t p) const;
};

// "why not" in words a user can act on, e.g. "'pypi.org:99999': port must be 1-65535".
Result<Rule> ParseRule(std::string_view text);

// A DNS name as written, without a trailing dot: labels of [A-Za-z0-9-_], each 1-63 long
// (so no leading dot and no two dots in a row), none starting or ending with '-'; 253
// characters in all. Shared by the rules, NormalizeHost and the proxy's SNI check.
bool IsDnsName(std::string_view name);

// Lower case, no trailing dot; empty if `host` is not a plausible DNS name or IP literal.
std::string NormalizeHost(std::string_view host);

// Why `a` is never reached, or "" if it may be: "loopback", "private", "link-local",
// "cloud metadata", "unspecified", "multicast", "reserved".
std::string ForbiddenRange(const IpAddress& a);

}  // namespace corral::runtime::net
