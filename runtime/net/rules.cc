#include "runtime/net/rules.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

namespace corral::runtime::net {
namespace {

std::optional<IpNetwork> ParseNetwork(std::string_view text) {
  size_t slash = text.find('/');
  auto base = IpAddress::Parse(text.substr(0, slash));
  if (!base) return std::nullopt;
  int max = base->family == 4 ? 32 : 128;
  int prefix = max;
  if (slash != std::string_view::npos) {
    std::string_view p = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), prefix);
    if (ec != std::errc() || end != p.data() + p.size() || prefix < 0 || prefix > max) {
      return std::nullopt;
    }
  }
  return IpNetwork{*base, prefix};
}

// Splits "host:port" (IPv6 CIDRs carry colons: "[fd00::/8]:5432" or a bare CIDR).
std::pair<std::string_view, std::optional<std::string_view>> SplitPort(std::string_view text) {
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return {text, std::nullopt};
    std::string_view host = text.substr(1, close - 1);
    if (close + 1 < text.size() && text[close + 1] == ':') return {host, text.substr(close + 2)};
    return {host, std::nullopt};
  }
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || text.find(':') != colon) return {text, std::nullopt};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

bool InV4(const IpAddress& a, uint8_t b0, uint8_t b1, int prefix) {
  IpAddress base;
  base.family = 4;
  base.bytes[0] = b0;
  base.bytes[1] = b1;
  return IpNetwork{base, prefix}.Contains(a);
}

std::string ForbiddenV4(const IpAddress& a) {
  const auto& b = a.bytes;
  if (b[0] == 169 && b[1] == 254 && b[2] == 169 && b[3] == 254) return "cloud metadata";
  if (b[0] == 0) return "unspecified";
  if (b[0] == 127) return "loopback";
  if (b[0] == 10 || InV4(a, 172, 16, 12) || InV4(a, 192, 168, 16)) return "private";
  if (InV4(a, 100, 64, 10)) return "private";  // carrier-grade NAT, often a provider's LAN
  if (InV4(a, 169, 254, 16)) return "link-local";
  if (b[0] >= 224 && b[0] <= 239) return "multicast";
  if (b[0] >= 240) return "reserved";                                  // and the broadcast address
  if (InV4(a, 192, 0, 24) || InV4(a, 198, 18, 15)) return "reserved";  // IETF, benchmarking
  return "";
}

std::string ForbiddenV6(const IpAddress& a) {
  const auto& b = a.bytes;
  static const uint8_t kMetadata[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
                                        0,    0,    0,    0,    0, 0, 0x02, 0x54};
  if (std::equal(b.begin(), b.end(), kMetadata)) return "cloud metadata";
  bool zero_head = std::all_of(b.begin(), b.begin() + 15, [](uint8_t x) { return x == 0; });
  if (zero_head && b[15] == 0) return "unspecified";
  if (zero_head && b[15] == 1) return "loopback";
  if ((b[0] & 0xfe) == 0xfc) return "private";                     // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";  // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "private";     // fec0::/10 site-local
  if (b[0] == 0xff) return "multicast";
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "reserved";
  if ((b[0] & 0xe0) != 0x20) return "reserved";  // only 2000::/3 is global unicast
  return "";
}

Error RuleError(std::string_view text, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument, "'" + std::string(text) + "': " + why);
}

Result<std::optional<uint16_t>> ParsePort(std::string_view text, std::string_view p, bool* any) {
  if (p == "*") {
    *any = true;
    return std::optional<uint16_t>();
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size() || value < 1 || value > 65535) {
    return RuleError(text, "port must be 1-65535 or *");
  }
  return std::optional<uint16_t>(static_cast<uint16_t>(value));
}

}  // namespace

namespace {

// ASCII only, whatever the locale: a name's bytes come from outside (SNI, DNS, requests).
bool IsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

}  // namespace

bool IsDnsName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-' ||
        !std::all_of(label.begin(), label.end(), IsLabelChar)) {
      return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  std::string s(text);
  IpAddress a;
  if (::inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.family = 4;
    return a;
  }
  if (::inet_pton(AF_INET6, s.c_str(), a.bytes.data()) != 1) return std::nullopt;
  a.family = 6;
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(a.bytes.begin(), a.bytes.begin() + 12, kMapped)) {
    IpAddress v4;
    std::copy(a.bytes.begin() + 12, a.bytes.end(), v4.bytes.begin());
    return v4;
  }
  return a;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(family == 4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof buf);
  return buf;
}

bool IpNetwork::Contains(const IpAddress& a) const {
  if (a.family != base.family) return false;
  int full = prefix / 8;
  if (!std::equal(a.bytes.begin(), a.bytes.begin() + full, base.bytes.begin())) return false;
  int rest = prefix % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (base.bytes[full] & mask);
}

bool Rule::MatchesPort(uint16_t p) const {
  if (any_port) return true;
  if (port) return *port == p;
  return std::find(std::begin(kWebPorts), std::end(kWebPorts), p) != std::end(kWebPorts);
}

std::string NormalizeHost(std::string_view host) {
  std::string h(host);
  // Brackets wrap an IP literal only (a URL's "[::1]"). Around anything else they are part
  // of the text, which is then no host name: stripping them would let a query for the DNS
  // name "[x]" be judged as "x" (found by fuzz_netproxy_dns).
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') {
    auto ip = IpAddress::Parse(h.substr(1, h.size() - 2));
    return ip ? ip->ToString() : std::string();
  }
  if (auto ip = IpAddress::Parse(h)) return ip->ToString();
  if (!h.empty() && h.back() == '.') h.pop_back();
  std::transform(h.begin(), h.end(), h.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return IsDnsName(h) ? h : std::string();
}

std::string ForbiddenRange(const IpAddress& a) {
  return a.family == 4 ? ForbiddenV4(a) : ForbiddenV6(a);
}

Result<Rule> ParseRule(std::string_view text) {
  Rule r;
  r.text = std::string(text);
  if (text.empty()) return RuleError(text, "empty rule");
  auto [host, port] = SplitPort(text);
  if (port) {
    ASSIGN_OR_RETURN(r.port, ParsePort(text, *port, &r.any_port));
  }
  if (host == "*") {
    r.kind = Rule::Kind::kAnyName;
    return r;
  }
  if (host.find('/') != std::string_view::npos || IpAddress::Parse(host)) {
    auto network = ParseNetwork(host);
    if (!network) return RuleError(text, "not a valid IP network (want e.g. 10.1.0.0/16)");
    r.kind = Rule::Kind::kCidr;
    r.network = *network;
    return r;
  }
  if (host.starts_with("*.")) {
    r.kind = Rule::Kind::kSubdomains;
    host.remove_prefix(2);
  }
  if (host.find('*') != std::string_view::npos) {
    return RuleError(text, "'*' is allowed only as a whole first label (*.example.com)");
  }
  r.name = NormalizeHost(host);
  if (r.name.empty() || IpAddress::Parse(r.name)) {
    return RuleError(text, "not a host name (letters, digits, '-', '.'; at most 253 characters)");
  }
  return r;
}

}  // namespace corral::runtime::net
