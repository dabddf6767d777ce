// The one place where the proxy decides and connects out ("policy glue"). Every way into
// the proxy (HTTP, CONNECT, SOCKS5, captured TCP) asks OpenUpstream for (host, port):
//   1. the host is normalized (a capture address 127.100.x.y stands for its name);
//   2. Policy::CheckName - before anything is resolved; IP literals too (only CIDR rules
//      allow them);
//   3. the connection limit and the byte cap;
//   4. resolution in the host's network namespace (Asio's resolver: getaddrinfo on Asio's
//      resolver thread), or Policy::Override's addresses (unsafe.network_resolve);
//   5. Policy::CheckAddress for each address; only allowed ones are tried, in order.
// Every outcome is logged and counted (one decision line). Runs on the I/O thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_context.h"

namespace corral::runtime::net {

struct Upstream {
  enum class Outcome {
    kConnected,
    kDenied,       // the policy said no (HTTP 403, SOCKS 0x02)
    kLimit,        // connection limit or byte cap (HTTP 503, SOCKS 0x01)
    kUnreachable,  // no address, or none answered (HTTP 502, SOCKS 0x04)
  };
  Outcome outcome = Outcome::kDenied;
  std::string reason;                                  // for a refusal, as logged
  std::string host;                                    // the normalized name the decision was about
  std::optional<boost::asio::ip::tcp::socket> socket;  // kConnected
  std::shared_ptr<ConnectionRecord> record;            // kConnected
};

// Connect timeout per address tried.
inline constexpr auto kConnectTimeout = std::chrono::seconds(10);

// `via`: "http", "connect", "socks", "tcp"; `host` as the client sent it.
boost::asio::awaitable<Upstream> OpenUpstream(ProxyContext& ctx, std::string via, std::string host,
                                              uint16_t port);

// Whether a host is an IP literal (no name to compare a TLS server name with).
bool IsIpLiteral(const std::string& host);

}  // namespace corral::runtime::net
