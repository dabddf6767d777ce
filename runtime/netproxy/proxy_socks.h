// The SOCKS5 proxy on the jail's 127.0.0.1:1080 (ALL_PROXY=socks5h://127.0.0.1:1080):
// no authentication, CONNECT only, addresses as names (ATYP 3), IPv4 or IPv6. The target
// goes through the same decision as every other way out (runtime/netproxy/proxy_upstream.h);
// an allowed tunnel to a name has its TLS server name checked (proxy_relay.h).
// Replies: 0x00 connected, 0x02 not allowed by the rules, 0x01 connection limit / byte
// cap, 0x04 unreachable, 0x07 command not supported, 0x08 address type not supported.
// A client that is not speaking SOCKS5, or too slowly (30 s for greeting and request),
// is disconnected.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_context.h"

namespace corral::runtime::net {

inline constexpr auto kSocksHandshakeTimeout = std::chrono::seconds(30);

boost::asio::awaitable<void> ServeSocksClient(ProxyContext& ctx,
                                              boost::asio::ip::tcp::socket client);

}  // namespace corral::runtime::net
