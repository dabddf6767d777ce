#include "runtime/netproxy/proxy_http.h"

#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <set>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_relay.h"
#include "runtime/netproxy/proxy_target.h"
#include "runtime/netproxy/proxy_upstream.h"

namespace corral::runtime::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr auto kAnswerTimeout = std::chrono::seconds(10);
// After a refusal, what the client still sends is read and dropped for a moment before
// the close: closing with unread input makes the kernel send a reset, and the client
// may then lose the answer (a 431 while it is still sending its headers).
constexpr auto kLingerTimeout = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 256 * 1024;

std::string_view View(beast::string_view text) { return {text.data(), text.size()}; }

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Header values carry reasons that may quote what the jail sent: printable ASCII only.
std::string HeaderSafe(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 512)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  return out;
}

asio::awaitable<void> LingeringClose(beast::tcp_stream& stream) {
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.expires_after(kLingerTimeout);
  std::vector<char> sink(16 * 1024);
  size_t drained = 0;
  while (!ec && drained < kLingerBytes) {
    const size_t n = co_await stream.async_read_some(asio::buffer(sink),
                                                     asio::redirect_error(asio::use_awaitable, ec));
    drained += n;
  }
  stream.close();
}

// Answers with `status` and a text body, then closes. `denied`: the X-Corral-Denied reason.
asio::awaitable<void> Answer(beast::tcp_stream& stream, http::status status, std::string denied,
                             std::string body) {
  http::response<http::string_body> response{status, 11};
  response.set(http::field::server, "corral-netproxy");
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  response.set(http::field::connection, "close");
  if (!denied.empty()) response.set("X-Corral-Denied", HeaderSafe(denied));
  response.body() = std::move(body);
  response.prepare_payload();
  stream.expires_after(kAnswerTimeout);
  boost::system::error_code ec;
  co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    stream.close();
    co_return;
  }
  co_await LingeringClose(stream);
}

asio::awaitable<void> AnswerRefusal(beast::tcp_stream& stream, const Upstream& up,
                                    const HostPort& target) {
  const std::string where = target.host + ":" + std::to_string(target.port);
  switch (up.outcome) {
    case Upstream::Outcome::kDenied:
      co_return co_await Answer(stream, http::status::forbidden, up.reason,
                                "corral: " + where + " is not allowed: " + up.reason + "\n");
    case Upstream::Outcome::kLimit:
      co_return co_await Answer(stream, http::status::service_unavailable, up.reason,
                                "corral: " + where + " refused: " + up.reason + "\n");
    case Upstream::Outcome::kUnreachable:
    case Upstream::Outcome::kConnected:
      break;
  }
  co_await Answer(stream, http::status::bad_gateway, "",
                  "corral: " + where + ": " + up.reason + "\n");
}

// A request head that could not be read: the answer, if the client is owed one.
asio::awaitable<void> AnswerReadError(beast::tcp_stream& stream, boost::system::error_code ec,
                                      bool got_some) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    co_return co_await Answer(
        stream, http::status::request_header_fields_too_large, "",
        "corral: request head over " + std::to_string(kMaxRequestHeadBytes) + " bytes\n");
  }
  if (ec == beast::error::timeout && got_some) {
    co_return co_await Answer(stream, http::status::request_timeout, "",
                              "corral: request head too slow\n");
  }
  static const auto& http_errors = http::make_error_code(http::error::bad_method).category();
  if (ec.category() == http_errors && ec != http::error::end_of_stream &&
      ec != http::error::partial_message) {
    co_return co_await Answer(stream, http::status::bad_request, "",
                              "corral: malformed HTTP request\n");
  }
  stream.close();  // the client went away (or sent nothing in time)
}

asio::awaitable<void> Connect(ProxyContext& ctx, beast::tcp_stream& stream,
                              beast::flat_buffer& buffer, std::string_view authority) {
  Result<HostPort> target = ParseAuthority(authority, std::nullopt);
  if (!target) {
    co_return co_await Answer(stream, http::status::bad_request, "",
                              "corral: CONNECT target: " + target.error().message() + "\n");
  }
  Upstream up = co_await OpenUpstream(ctx, "connect", target->host, target->port);
  if (up.outcome != Upstream::Outcome::kConnected)
    co_return co_await AnswerRefusal(stream, up, *target);
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  stream.expires_after(kAnswerTimeout);
  boost::system::error_code ec;
  co_await asio::async_write(stream, asio::buffer(kEstablished),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;  // the client left; the record logs the (empty) connection's end
  stream.expires_never();
  RelaySettings settings;
  settings.upstream_prefix = beast::buffers_to_string(buffer.data());
  settings.sni_name = IsIpLiteral(up.host) ? "" : up.host;
  StartRelay(stream.release_socket(), std::move(*up.socket), std::move(up.record),
             std::move(settings));
}

asio::awaitable<void> Forward(ProxyContext& ctx, beast::tcp_stream& stream,
                              beast::flat_buffer& buffer, const http::request_header<>& head) {
  Result<ForwardTarget> target = ParseForwardTarget(View(head.target()));
  if (!target)
    co_return co_await Answer(stream, http::status::bad_request, "",
                              "corral: " + target.error().message() + "\n");
  Upstream up = co_await OpenUpstream(ctx, "http", target->endpoint.host, target->endpoint.port);
  if (up.outcome != Upstream::Outcome::kConnected)
    co_return co_await AnswerRefusal(stream, up, target->endpoint);
  stream.expires_never();
  RelaySettings settings;
  settings.upstream_prefix =
      OriginFormHead(head, *target) + beast::buffers_to_string(buffer.data());
  StartRelay(stream.release_socket(), std::move(*up.socket), std::move(up.record),
             std::move(settings));
}

}  // namespace

std::string OriginFormHead(const http::request_header<>& head, const ForwardTarget& target) {
  // Hop-by-hop fields end here (RFC 9110 7.6.1), with those the Connection field names.
  std::set<std::string> drop = {
      "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate",
      "te",         "upgrade",          "host"};
  for (auto range = head.equal_range(http::field::connection); range.first != range.second;
       ++range.first) {
    for (const auto& token : http::token_list(range.first->value()))
      drop.insert(Lower(View(token)));
  }
  std::string out = std::string(View(head.method_string())) + " " + target.origin_form + " HTTP/" +
                    std::to_string(head.version() / 10) + "." +
                    std::to_string(head.version() % 10) + "\r\n";
  out += "Host: " + target.authority + "\r\n";
  for (const auto& field : head) {
    if (drop.count(Lower(View(field.name_string()))) != 0) continue;
    out +=
        std::string(View(field.name_string())) + ": " + std::string(View(field.value())) + "\r\n";
  }
  out += "Connection: close\r\n\r\n";
  return out;
}

asio::awaitable<void> ServeHttpProxyClient(ProxyContext& ctx, tcp::socket client) {
  PendingClient pending(ctx);
  beast::tcp_stream stream(std::move(client));
  // Room for a whole head; the parser's header_limit refuses a bigger one first.
  beast::flat_buffer buffer(kMaxRequestHeadBytes + 16 * 1024);
  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<uint32_t>(kMaxRequestHeadBytes));
  stream.expires_after(kRequestHeadTimeout);
  boost::system::error_code ec;
  co_await http::async_read_header(stream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return co_await AnswerReadError(stream, ec, parser.got_some() || buffer.size() > 0);
  const http::request_header<>& head = parser.get();
  if (head.method() == http::verb::connect) {
    co_await Connect(ctx, stream, buffer, View(head.target()));
  } else {
    co_await Forward(ctx, stream, buffer, head);
  }
}

}  // namespace corral::runtime::net
