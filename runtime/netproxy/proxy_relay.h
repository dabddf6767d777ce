// Relaying bytes between a jail client and the upstream it was allowed to reach, both
// ways, until both directions have ended: an end of stream is passed on as a half close
// (shutdown of the other socket's sending side), an error ends both. Bounded: a 64 KiB
// buffer per direction; a connection with no byte either way for kRelayIdleTimeout is
// closed; with Policy::max_bytes() set, a connection that would pass the cap is cut.
//
// Tunnels to a name (CONNECT, SOCKS5, captured TCP) check the TLS server name: the
// client's first bytes are read (upstream -> client already flows, so protocols where the
// server speaks first work) and, if they are a TLS ClientHello naming a server, that name
// must be the tunnel's; otherwise the connection is closed and the refusal logged.
// Runs on the I/O thread; the relay owns both sockets and the ConnectionRecord.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_context.h"

namespace corral::runtime::net {

inline constexpr auto kRelayIdleTimeout = std::chrono::minutes(5);
inline constexpr size_t kRelayBufferBytes = 64 * 1024;

struct RelaySettings {
  // Bytes for the upstream before anything read from the client now: what the client
  // sent after its handshake, or (HTTP) the rewritten request head and the body start.
  std::string upstream_prefix;
  // The name a TLS ClientHello must ask for; empty: no check (HTTP, IP-literal tunnels).
  std::string sni_name;
  // How the refusal names the tunnel: "SNI x does not match <tunnel_kind> <name>".
  std::string tunnel_kind = "CONNECT";
};

void StartRelay(boost::asio::ip::tcp::socket client, boost::asio::ip::tcp::socket upstream,
                std::shared_ptr<ConnectionRecord> record, RelaySettings settings);

}  // namespace corral::runtime::net
