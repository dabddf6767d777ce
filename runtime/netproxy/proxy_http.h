// The HTTP proxy on the jail's 127.0.0.1:3128 (http_proxy / https_proxy point here).
//
//   CONNECT host:port    -> the decision (runtime/netproxy/proxy_upstream.h); allowed: "200
//                           Connection established" and a tunnel whose TLS server name
//                           is checked (runtime/netproxy/proxy_relay.h)
//   GET http://host/path -> the decision; allowed: the request goes upstream in origin
//                           form with "Connection: close", then bytes are relayed both
//                           ways until either side ends
// One request per client connection: the upstream is told to close after its response,
// and whatever else the client sends on that connection can only reach that same allowed
// upstream. Clients open a new connection for the next request, as they do after a
// "Connection: close" response.
//
// Refusals are answered in-band, then the connection is closed: 403 with
// "X-Corral-Denied: <reason>" (policy), 503 (connection limit, byte cap; same header),
// 502 (unreachable), 400 (not a proxy request, malformed), 431 (head over 64 KiB), 408
// (no complete head within 30 s).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <string>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_context.h"
#include "runtime/netproxy/proxy_target.h"

namespace corral::runtime::net {

inline constexpr size_t kMaxRequestHeadBytes = 64 * 1024;
inline constexpr auto kRequestHeadTimeout = std::chrono::seconds(30);

// The head sent upstream for a forwarded request: the origin-form target, Host from the
// URI, hop-by-hop fields (and those Connection names) dropped, "Connection: close" added.
// Field values are as Beast's parser accepted them (no CR or LF in them).
std::string OriginFormHead(const boost::beast::http::request_header<>& head,
                           const ForwardTarget& target);

boost::asio::awaitable<void> ServeHttpProxyClient(ProxyContext& ctx,
                                                  boost::asio::ip::tcp::socket client);

}  // namespace corral::runtime::net
