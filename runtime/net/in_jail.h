// What a jail in `network.mode: allowlist` sees of corral's network service: the
// addresses on its own loopback where corral-netproxy listens (runtime/netproxy/main.cc
// creates the sockets inside the jail's network namespace), the environment that points
// proxy-aware clients at them, and the resolv.conf that points every resolver at corral's.
// Used by the planner (env, /etc) and by the proxy (ports). Header-only constants.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace corral::runtime::net {

inline constexpr uint16_t kHttpProxyPort = 3128;  // HTTP forward proxy and CONNECT
inline constexpr uint16_t kSocksPort = 1080;      // SOCKS5, for clients that speak only that
inline constexpr uint16_t kDnsPort = 53;          // UDP and TCP
inline constexpr const char* kProxyHost = "127.0.0.1";

// Proxy settings for the command's environment, in both spellings clients read (curl and
// wget read the lower-case ones, pip/requests and git either, npm its own npm_config_*).
// The command's own env entries override these.
inline std::vector<std::pair<std::string, std::string>> ProxyEnvironment() {
  const std::string http = "http://127.0.0.1:" + std::to_string(kHttpProxyPort);
  const std::string socks = "socks5h://127.0.0.1:" + std::to_string(kSocksPort);
  const std::string none = "localhost,127.0.0.1,::1";
  return {{"HTTP_PROXY", http},       {"http_proxy", http},
          {"HTTPS_PROXY", http},      {"https_proxy", http},
          {"ALL_PROXY", socks},       {"all_proxy", socks},
          {"NO_PROXY", none},         {"no_proxy", none},
          {"npm_config_proxy", http}, {"npm_config_https_proxy", http}};
}

// /etc/resolv.conf in the jail: corral's resolver only, answers at once (NXDOMAIN for a
// name off the list), so one attempt and a short timeout.
inline std::string ResolvConf() {
  return "# corral: names on the sandbox's network allow-list resolve; no other name does\n"
         "nameserver 127.0.0.1\noptions timeout:2 attempts:2\n";
}

}  // namespace corral::runtime::net
