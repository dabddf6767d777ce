#include "runtime/net/policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

namespace corral::runtime::net {
namespace {

bool NameMatches(const Rule& r, std::string_view host) {
  switch (r.kind) {
    case Rule::Kind::kAnyName:
      return true;
    case Rule::Kind::kName:
      return host == r.name;
    case Rule::Kind::kSubdomains:
      return host.size() > r.name.size() + 1 && host.ends_with(r.name) &&
             host[host.size() - r.name.size() - 1] == '.';
    case Rule::Kind::kCidr:
      return false;
  }
  return false;
}

bool CidrMatches(const Rule& r, const IpAddress& a) {
  return r.kind == Rule::Kind::kCidr && r.network.Contains(a);
}

// A deny rule without a port denies every port.
bool DenyPort(const Rule& r, uint16_t port) { return !r.port || *r.port == port; }

}  // namespace

Result<Policy> Policy::FromSpec(const NetworkSpec& network, const UnsafeSpec& unsafe) {
  Policy p;
  std::string problems;  // every bad rule, one per line: fix them all in one go
  auto problem = [&](const std::string& line) {
    problems += (problems.empty() ? "" : "\n") + line;
  };
  auto parse_all = [&](const std::vector<std::string>& texts, const char* field,
                       std::vector<Rule>* out) {
    for (size_t i = 0; i < texts.size(); ++i) {
      auto rule = ParseRule(texts[i]);
      if (rule) {
        out->push_back(std::move(*rule));
      } else {
        problem(std::string(field) + "[" + std::to_string(i) + "]: " + rule.error().message());
      }
    }
  };
  parse_all(network.allow, "network.allow", &p.allow_);
  parse_all(network.deny, "network.deny", &p.deny_);
  for (const auto& [name, address] : unsafe.network_resolve) {
    std::string host = NormalizeHost(name);
    auto ip = IpAddress::Parse(address);
    if (host.empty() || !ip) {
      problem("unsafe.network_resolve." + name + ": want a host name and an IP address, got '" +
              address + "'");
    } else {
      p.overrides_.emplace_back(host, *ip);
    }
  }
  if (!problems.empty()) return Error(ErrorCode::kInvalidArgument, problems);
  p.max_connections_ = network.max_connections;
  p.max_bytes_ = network.max_bytes;
  return p;
}

void Policy::AddNever(const IpAddress& address, uint16_t port) {
  never_.emplace_back(address, port);
}

Verdict Policy::CheckName(std::string_view raw_host, uint16_t port) const {
  std::string host = NormalizeHost(raw_host);
  if (host.empty()) return {false, "not a valid host name"};
  if (port == 0) return {false, "port 0"};
  if (auto ip = IpAddress::Parse(host)) {
    for (const Rule& r : deny_) {
      if (CidrMatches(r, *ip) && DenyPort(r, port)) return {false, "denied by '" + r.text + "'"};
    }
    for (const Rule& r : allow_) {
      if (CidrMatches(r, *ip) && r.MatchesPort(port)) return {true, ""};
    }
    return {false, "IP address not allowed (only a CIDR rule allows an address)"};
  }
  for (const Rule& r : deny_) {
    if (NameMatches(r, host) && DenyPort(r, port)) return {false, "denied by '" + r.text + "'"};
  }
  bool name_listed = false;
  for (const Rule& r : allow_) {
    if (!NameMatches(r, host)) continue;
    if (r.MatchesPort(port)) return {true, ""};
    name_listed = true;
  }
  if (name_listed) return {false, "port " + std::to_string(port) + " not allowed for " + host};
  return {false, "not on the allow-list"};
}

Verdict Policy::CheckAddress(std::string_view raw_host, const IpAddress& address,
                             uint16_t port) const {
  for (const auto& [never, never_port] : never_) {
    if (never == address && (never_port == 0 || never_port == port)) {
      return {false, "corral's own API address"};
    }
  }
  std::string host = NormalizeHost(raw_host);
  for (const Rule& r : deny_) {
    if (CidrMatches(r, address) && DenyPort(r, port)) return {false, "denied by '" + r.text + "'"};
  }
  if (auto o = Override(host); o && std::find(o->begin(), o->end(), address) != o->end()) {
    return {true, ""};  // unsafe.network_resolve: the operator named this address
  }
  std::string range = ForbiddenRange(address);
  if (range.empty()) return {true, ""};
  if (range == "private") {
    for (const Rule& r : allow_) {
      if (CidrMatches(r, address) && r.MatchesPort(port)) return {true, ""};
    }
  }
  return {false, address.ToString() + " is a " + range + " address"};
}

bool Policy::NameAllowed(std::string_view raw_host) const {
  std::string host = NormalizeHost(raw_host);
  if (host.empty() || IpAddress::Parse(host)) return false;
  for (const Rule& r : deny_) {
    if (NameMatches(r, host) && !r.port) return false;
  }
  return std::any_of(allow_.begin(), allow_.end(),
                     [&](const Rule& r) { return NameMatches(r, host); });
}

std::vector<uint16_t> Policy::CapturePorts(std::string_view raw_host) const {
  std::string host = NormalizeHost(raw_host);
  std::vector<uint16_t> ports;
  auto add = [&](uint16_t p) {
    if (std::find(ports.begin(), ports.end(), p) == ports.end() && CheckName(host, p).allowed) {
      ports.push_back(p);
    }
  };
  for (const Rule& r : allow_) {
    if (!NameMatches(r, host)) continue;
    if (r.port) {
      add(*r.port);
    } else {
      for (uint16_t p : kWebPorts) add(p);
    }
  }
  std::sort(ports.begin(), ports.end());
  return ports;
}

std::optional<std::vector<IpAddress>> Policy::Override(std::string_view raw_host) const {
  std::string host = NormalizeHost(raw_host);
  std::vector<IpAddress> out;
  for (const auto& [name, ip] : overrides_) {
    if (name == host) out.push_back(ip);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

nlohmann::json Policy::ToJson() const {
  auto texts = [](const std::vector<Rule>& rules) {
    nlohmann::json a = nlohmann::json::array();
    for (const Rule& r : rules) a.push_back(r.text);
    return a;
  };
  nlohmann::json resolve = nlohmann::json::array();
  for (const auto& [name, ip] : overrides_) resolve.push_back({name, ip.ToString()});
  nlohmann::json never = nlohmann::json::array();
  for (const auto& [ip, port] : never_) never.push_back({ip.ToString(), port});
  nlohmann::json j = {{"allow", texts(allow_)},
                      {"deny", texts(deny_)},
                      {"resolve", resolve},
                      {"never", never},
                      {"max_connections", max_connections_}};
  j["max_bytes"] = max_bytes_ ? nlohmann::json(*max_bytes_) : nlohmann::json(nullptr);
  return j;
}

Result<Policy> Policy::FromJson(const nlohmann::json& j) {
  try {
    NetworkSpec network;
    UnsafeSpec unsafe;
    network.mode = NetworkMode::kAllowlist;
    network.allow = j.at("allow").get<std::vector<std::string>>();
    network.deny = j.at("deny").get<std::vector<std::string>>();
    network.max_connections = j.at("max_connections").get<int64_t>();
    if (!j.at("max_bytes").is_null()) network.max_bytes = j.at("max_bytes").get<int64_t>();
    for (const auto& pair : j.at("resolve")) {
      unsafe.network_resolve.emplace_back(pair.at(0).get<std::string>(),
                                          pair.at(1).get<std::string>());
    }
    ASSIGN_OR_RETURN(Policy p, FromSpec(network, unsafe));
    for (const auto& pair : j.at("never")) {
      auto ip = IpAddress::Parse(pair.at(0).get<std::string>());
      if (!ip) return Error(ErrorCode::kInvalidArgument, "policy JSON: bad address in never");
      p.AddNever(*ip, pair.at(1).get<uint16_t>());
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidArgument, std::string("policy JSON: ") + e.what());
  }
}

}  // namespace corral::runtime::net
