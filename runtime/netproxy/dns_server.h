// The in-jail resolver on the jail's 127.0.0.1:53, UDP and TCP (the jail's resolv.conf
// names it). Answers from the policy alone and never forwards a query anywhere:
//   A of an allowed name    -> its capture address (TTL 60), whose listeners are made
//                              before the answer leaves (runtime/netproxy/proxy_tcp.h)
//   other types, allowed    -> NOERROR, no records (AAAA: clients fall back to IPv4)
//   a name not allowed      -> NXDOMAIN at once, logged (via "dns", port 0)
//   no capture address left -> SERVFAIL
// Garbage and responses are dropped; a TCP client gets 10 s per message.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/netproxy/proxy_context.h"

namespace corral::runtime::net {

inline constexpr auto kDnsTcpTimeout = std::chrono::seconds(10);

// The answer to one query message (logged and counted); empty: send nothing.
std::vector<uint8_t> AnswerDnsMessage(ProxyContext& ctx, std::span<const uint8_t> query);

// Serves a bound UDP socket and a listening TCP socket (both from JailNetns).
Status StartDnsServers(ProxyContext& ctx, UniqueFd udp, UniqueFd tcp_listener);

}  // namespace corral::runtime::net
