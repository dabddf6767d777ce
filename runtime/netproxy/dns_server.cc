#include "runtime/netproxy/dns_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "runtime/netproxy/dns_answer.h"
#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_listen.h"
#include "runtime/netproxy/proxy_tcp.h"

namespace corral::runtime::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using asio::ip::udp;

namespace {

// Queries are small; EDNS allows 4096-byte UDP messages, which bounds the buffers.
constexpr size_t kMaxDnsMessage = 4096;

asio::awaitable<void> ServeUdp(ProxyContext& ctx, udp::socket socket) {
  std::vector<uint8_t> buffer(kMaxDnsMessage);
  for (;;) {
    udp::endpoint peer;
    boost::system::error_code ec;
    const size_t n = co_await socket.async_receive_from(
        asio::buffer(buffer), peer, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
    if (ec) continue;  // e.g. an ICMP error of an earlier answer surfacing here
    std::vector<uint8_t> answer = AnswerDnsMessage(ctx, std::span(buffer.data(), n));
    if (answer.empty()) continue;
    co_await socket.async_send_to(asio::buffer(answer), peer,
                                  asio::redirect_error(asio::use_awaitable, ec));
  }
}

// RFC 7766: each message with a 2-byte length; several per connection.
asio::awaitable<void> ServeTcpClient(ProxyContext& ctx, tcp::socket client) {
  PendingClient pending(ctx);
  beast::tcp_stream stream(std::move(client));
  std::vector<uint8_t> message;
  for (;;) {
    stream.expires_after(kDnsTcpTimeout);
    uint8_t length_bytes[2];
    boost::system::error_code ec;
    co_await asio::async_read(stream, asio::buffer(length_bytes),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    const size_t length = static_cast<size_t>(length_bytes[0] << 8 | length_bytes[1]);
    if (length == 0 || length > kMaxDnsMessage) co_return;
    message.resize(length);
    co_await asio::async_read(stream, asio::buffer(message),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    std::vector<uint8_t> answer = AnswerDnsMessage(ctx, message);
    if (answer.empty()) co_return;
    answer.insert(answer.begin(), {static_cast<uint8_t>(answer.size() >> 8),
                                   static_cast<uint8_t>(answer.size() & 0xFF)});
    co_await asio::async_write(stream, asio::buffer(answer),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
  }
}

}  // namespace

std::vector<uint8_t> AnswerDnsMessage(ProxyContext& ctx, std::span<const uint8_t> wire) {
  std::optional<DnsQuery> query = DnsQuery::Parse(wire);
  if (!query) return {};
  const bool name_allowed =
      !query->Problem() && !query->name().empty() && ctx.policy.NameAllowed(query->name());
  DnsAnswerKind kind = DecideDnsAnswer(*query, name_allowed);
  std::optional<IpAddress> address;
  if (kind == DnsAnswerKind::kAddress) {
    const bool first = !ctx.captures.Listening(query->name());
    Result<IpAddress> capture = EnsureCaptureListeners(ctx, query->name());
    if (capture) {
      address = *capture;
      if (first) ctx.Record({"dns", query->name(), 0, true, "", capture->ToString()});
    } else {
      spdlog::warn("resolver: {}: {}", query->name(), capture.error().message());
      kind = DnsAnswerKind::kServerFailure;
    }
  } else if (kind == DnsAnswerKind::kNameError) {
    std::string reason = ctx.policy.CheckName(query->name(), 443).reason;
    if (reason.empty()) reason = "not on the allow-list";
    ctx.Record({"dns", query->name(), 0, false, std::move(reason), ""});
  }
  return query->Reply(kind, address);
}

Status StartDnsServers(ProxyContext& ctx, UniqueFd udp_fd, UniqueFd tcp_listener) {
  udp::socket socket(*ctx.io);
  boost::system::error_code ec;
  socket.assign(udp::v4(), udp_fd.get(), ec);
  if (ec)
    return Error(ErrorCode::kIo, "resolver 127.0.0.1:53/udp: adopting the socket: " + ec.message());
  udp_fd.Release();
  const asio::any_io_executor executor = socket.get_executor();
  Spawn(executor, ServeUdp(ctx, std::move(socket)), "resolver (udp)");
  return StartAcceptLoop(ctx, std::move(tcp_listener), ServeTcpClient, "resolver 127.0.0.1:53/tcp");
}

}  // namespace corral::runtime::net
