#include "runtime/netproxy/proxy_upstream.h"

#include <boost/beast/core/tcp_stream.hpp>
#include <vector>

#include "base/result.h"
#include "runtime/netproxy/proxy_awaitable.h"

namespace corral::runtime::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using Outcome = Upstream::Outcome;

namespace {

struct UpstreamRequest {
  std::string via;
  std::string host;
  uint16_t port = 0;
};

Upstream Refuse(ProxyContext& ctx, const UpstreamRequest& request, const std::string& host,
                Outcome outcome, std::string reason) {
  ctx.Record({request.via, host.empty() ? request.host : host, request.port, false, reason, ""});
  Upstream out;
  out.outcome = outcome;
  out.reason = std::move(reason);
  out.host = host;
  return out;
}

// The host the decision is about: normalized, and a capture address replaced by the name
// it was given to (a client that resolved through corral's resolver and then asked the
// proxy for the address, e.g. SOCKS5 without remote resolution).
std::string DecisionHost(const ProxyContext& ctx, const std::string& requested) {
  std::string host = NormalizeHost(requested);
  if (std::optional<IpAddress> ip = IpAddress::Parse(host)) {
    if (std::optional<std::string> name = ctx.captures.NameAt(*ip)) return *name;
  }
  return host;
}

// The host's addresses: the literal itself, unsafe.network_resolve's, or getaddrinfo's
// in the host's network namespace (this thread's).
asio::awaitable<Result<std::vector<IpAddress>>> Resolve(const ProxyContext& ctx, std::string host,
                                                        uint16_t port) {
  if (std::optional<IpAddress> literal = IpAddress::Parse(host))
    co_return std::vector<IpAddress>{*literal};
  if (auto fixed = ctx.policy.Override(host)) co_return *fixed;
  tcp::resolver resolver(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  auto results =
      co_await resolver.async_resolve(host, std::to_string(port), tcp::resolver::numeric_service,
                                      asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return Error(ErrorCode::kNotFound, "cannot resolve " + host + ": " + ec.message());
  std::vector<IpAddress> addresses;
  for (const auto& entry : results) {
    std::optional<IpAddress> a = IpAddress::Parse(entry.endpoint().address().to_string());
    if (!a) continue;
    bool seen = false;
    for (const IpAddress& b : addresses) seen = seen || b == *a;
    if (!seen) addresses.push_back(*a);
  }
  if (addresses.empty()) co_return Error(ErrorCode::kNotFound, "no address for " + host);
  co_return addresses;
}

tcp::endpoint Endpoint(const IpAddress& a, uint16_t port) {
  boost::system::error_code ec;
  return tcp::endpoint(asio::ip::make_address(a.ToString(), ec), port);
}

// Connects to the first address that answers within kConnectTimeout.
asio::awaitable<std::optional<tcp::socket>> ConnectAny(std::vector<IpAddress> addresses,
                                                       uint16_t port, IpAddress* connected,
                                                       std::string* error) {
  for (const IpAddress& a : addresses) {
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    stream.expires_after(kConnectTimeout);
    boost::system::error_code ec;
    co_await stream.async_connect(Endpoint(a, port), asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      *connected = a;
      stream.expires_never();
      co_return stream.release_socket();
    }
    *error =
        a.ToString() + ": " + (ec == beast::error::timeout ? "connect timed out" : ec.message());
  }
  co_return std::nullopt;
}

}  // namespace

bool IsIpLiteral(const std::string& host) { return IpAddress::Parse(host).has_value(); }

asio::awaitable<Upstream> OpenUpstream(ProxyContext& ctx, std::string via, std::string host_as_sent,
                                       uint16_t port) {
  const UpstreamRequest request{std::move(via), std::move(host_as_sent), port};
  const std::string host = DecisionHost(ctx, request.host);
  if (host.empty()) co_return Refuse(ctx, request, host, Outcome::kDenied, "invalid host name");
  const Verdict by_name = ctx.policy.CheckName(host, request.port);
  if (!by_name.allowed) co_return Refuse(ctx, request, host, Outcome::kDenied, by_name.reason);
  if (ctx.open_connections >= ctx.policy.max_connections()) {
    co_return Refuse(ctx, request, host, Outcome::kLimit, "connection limit");
  }
  if (ctx.ByteLimitReached()) co_return Refuse(ctx, request, host, Outcome::kLimit, "byte limit");
  // Takes the slot now: a connection being resolved counts against the limit.
  auto record = std::make_shared<ConnectionRecord>(ctx, request.via, host, request.port);

  Result<std::vector<IpAddress>> resolved = co_await Resolve(ctx, host, request.port);
  if (!resolved)
    co_return Refuse(ctx, request, host, Outcome::kUnreachable, resolved.error().message());
  std::vector<IpAddress> allowed;
  std::string first_refusal;
  for (const IpAddress& a : *resolved) {
    const Verdict v = ctx.policy.CheckAddress(host, a, request.port);
    if (v.allowed) {
      allowed.push_back(a);
    } else if (first_refusal.empty()) {
      first_refusal = v.reason;
    }
  }
  if (allowed.empty()) co_return Refuse(ctx, request, host, Outcome::kDenied, first_refusal);

  IpAddress connected;
  std::string error;
  std::optional<tcp::socket> socket =
      co_await ConnectAny(std::move(allowed), request.port, &connected, &error);
  if (!socket) co_return Refuse(ctx, request, host, Outcome::kUnreachable, "unreachable: " + error);
  record->MarkConnected(connected.ToString());
  ctx.Record({request.via, host, request.port, true, "", connected.ToString()});
  Upstream out;
  out.outcome = Outcome::kConnected;
  out.host = host;
  out.socket = std::move(socket);
  out.record = std::move(record);
  co_return out;
}

}  // namespace corral::runtime::net
