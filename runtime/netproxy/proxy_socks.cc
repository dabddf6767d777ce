#include "runtime/netproxy/proxy_socks.h"

#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <functional>
#include <span>
#include <vector>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_relay.h"
#include "runtime/netproxy/proxy_socks_wire.h"
#include "runtime/netproxy/proxy_upstream.h"

namespace corral::runtime::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

// A greeting is at most 257 bytes, a request 262; more without a complete one is not SOCKS.
constexpr size_t kMaxMessageBytes = 1024;
constexpr uint8_t kConnectCommand = 1;

// Reads until `parse` decides; the bytes stay in `data` (the caller removes the message).
asio::awaitable<SocksParse> ReadMessage(beast::tcp_stream& stream, std::vector<uint8_t>& data,
                                        std::function<SocksParse(std::span<const uint8_t>)> parse) {
  uint8_t chunk[512];
  for (;;) {
    const SocksParse result = parse(data);
    if (result != SocksParse::kNeedMore) co_return result;
    if (data.size() >= kMaxMessageBytes) co_return SocksParse::kBad;
    boost::system::error_code ec;
    const size_t n = co_await stream.async_read_some(asio::buffer(chunk),
                                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return SocksParse::kBad;
    data.insert(data.end(), chunk, chunk + n);
  }
}

asio::awaitable<bool> Send(beast::tcp_stream& stream, std::vector<uint8_t> bytes) {
  boost::system::error_code ec;
  co_await asio::async_write(stream, asio::buffer(bytes),
                             asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

SocksReply ReplyFor(Upstream::Outcome outcome) {
  switch (outcome) {
    case Upstream::Outcome::kConnected:
      return SocksReply::kSucceeded;
    case Upstream::Outcome::kDenied:
      return SocksReply::kNotAllowed;
    case Upstream::Outcome::kLimit:
      return SocksReply::kGeneralFailure;
    case Upstream::Outcome::kUnreachable:
      return SocksReply::kHostUnreachable;
  }
  return SocksReply::kGeneralFailure;
}

void Consume(std::vector<uint8_t>& data, size_t n) {
  data.erase(data.begin(), data.begin() + static_cast<ptrdiff_t>(n));
}

}  // namespace

asio::awaitable<void> ServeSocksClient(ProxyContext& ctx, tcp::socket client) {
  PendingClient pending(ctx);
  beast::tcp_stream stream(std::move(client));
  stream.expires_after(kSocksHandshakeTimeout);
  std::vector<uint8_t> data;

  SocksGreeting greeting;
  auto parse_greeting = [&greeting](std::span<const uint8_t> d) {
    return ParseSocksGreeting(d, &greeting);
  };
  const SocksParse greeting_read = co_await ReadMessage(stream, data, parse_greeting);
  if (greeting_read != SocksParse::kOk) co_return;
  Consume(data, greeting.consumed);
  const bool method_sent = co_await Send(stream, SocksMethodReply(greeting.offers_no_auth));
  if (!method_sent || !greeting.offers_no_auth) co_return;

  SocksRequest request;
  auto parse_request = [&request](std::span<const uint8_t> d) {
    return ParseSocksRequest(d, &request);
  };
  const SocksParse request_read = co_await ReadMessage(stream, data, parse_request);
  if (request_read != SocksParse::kOk) co_return;
  Consume(data, request.consumed);
  if (request.host.empty()) {
    co_await Send(stream, SocksRequestReply(SocksReply::kAddressTypeNotSupported));
    co_return;
  }
  if (request.command != kConnectCommand) {
    co_await Send(stream, SocksRequestReply(SocksReply::kCommandNotSupported));
    co_return;
  }

  Upstream up = co_await OpenUpstream(ctx, "socks", request.host, request.port);
  const bool sent = co_await Send(stream, SocksRequestReply(ReplyFor(up.outcome)));
  if (up.outcome != Upstream::Outcome::kConnected || !sent) co_return;
  stream.expires_never();
  RelaySettings settings;
  settings.upstream_prefix.assign(data.begin(), data.end());  // sent before our reply came
  settings.sni_name = IsIpLiteral(up.host) ? "" : up.host;
  settings.tunnel_kind = "SOCKS";
  StartRelay(stream.release_socket(), std::move(*up.socket), std::move(up.record),
             std::move(settings));
}

}  // namespace corral::runtime::net
