// The network allow-list: which host names and ports a jail in `network.mode: allowlist`
// may reach through corral's proxy and resolver, and which addresses are never reached.
//
// Rules (network.allow / network.deny, one string each):
//   pypi.org              exactly that name, ports 80 and 443
//   *.github.com          any name below github.com (not github.com itself), 80 and 443
//   api.example.com:8443  that name, that port only
//   pypi.org:*            that name, any port
//   *                     any name, 80 and 443 ("*:*": any port) - still public addresses only
//   10.1.0.0/16:5432      addresses in that network (IP literals, or what an allowed name
//                         resolves to), that port; a CIDR rule is the only way to reach a
//                         private address
// Names are compared lower-case without a trailing dot. Deny wins over allow; a deny rule
// without a port denies every port.
//
// Whatever the rules say, these addresses are refused (ForbiddenRange): unspecified,
// loopback, private (RFC 1918, ULA, CGNAT), link-local (and with it the cloud metadata
// addresses 169.254.169.254 and fd00:ec2::254), multicast, reserved, and corral's own
// listen addresses. Two exceptions, both explicit: a CIDR allow rule covering a private
// (never loopback, link-local or metadata) address, and unsafe.network_resolve, the test
// fixtures' name -> address map, whose addresses are used as given.
//
// Pure logic: no sockets, no resolution. The grammar of one rule, addresses and host names
// are in rules.h. Used by corral (the plan) and by the
// proxy process (runtime/netproxy/proxy.h), which gets the policy as JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "runtime/net/rules.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::net {

struct Verdict {
  bool allowed = false;
  std::string reason;  // for a refusal: "not on the allow-list", "denied by 'evil.github.com'",...
};

class Policy {
 public:
  // Every rule parsed; the error lists every bad one, a line each, by field:
  // "network.allow[2]: ...".
  static Result<Policy> FromSpec(const NetworkSpec& network, const UnsafeSpec& unsafe);

  // Endpoints never reached whatever the rules say (corral's own API); port 0 = any port.
  void AddNever(const IpAddress& address, uint16_t port);

  // Before resolution. `host` is a name or an IP literal (then only CIDR rules allow it).
  Verdict CheckName(std::string_view host, uint16_t port) const;
  // After resolution: may `host` (already allowed by CheckName) be reached at `address`?
  Verdict CheckAddress(std::string_view host, const IpAddress& address, uint16_t port) const;
  // Is `host` allowed on any port? (The resolver answers such names, NXDOMAIN otherwise.)
  bool NameAllowed(std::string_view host) const;
  // The ports a plain TCP client is captured on for `host` (80 and 443 for a rule without
  // a port, the rule's port otherwise; an any-port rule contributes 80 and 443).
  std::vector<uint16_t> CapturePorts(std::string_view host) const;
  // unsafe.network_resolve's addresses for `host`, if it has an entry.
  std::optional<std::vector<IpAddress>> Override(std::string_view host) const;

  int64_t max_connections() const { return max_connections_; }
  std::optional<int64_t> max_bytes() const { return max_bytes_; }

  // The form the proxy process receives (and its inverse, which re-validates).
  nlohmann::json ToJson() const;
  static Result<Policy> FromJson(const nlohmann::json& j);

 private:
  std::vector<Rule> allow_;
  std::vector<Rule> deny_;
  std::vector<std::pair<std::string, IpAddress>> overrides_;
  std::vector<std::pair<IpAddress, uint16_t>> never_;
  int64_t max_connections_ = 64;
  std::optional<int64_t> max_bytes_;
};

}  // namespace corral::runtime::net
