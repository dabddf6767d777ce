#include "runtime/netproxy/proxy_tcp.h"

#include <boost/asio/ip/tcp.hpp>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_listen.h"
#include "runtime/netproxy/proxy_relay.h"
#include "runtime/netproxy/proxy_upstream.h"

namespace corral::runtime::net {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

asio::awaitable<void> ServeCapturedClient(ProxyContext& ctx, tcp::socket client, std::string name,
                                          uint16_t port) {
  Upstream up = co_await OpenUpstream(ctx, "tcp", name, port);
  if (up.outcome != Upstream::Outcome::kConnected) co_return;  // closing is the only answer
  RelaySettings settings;
  settings.sni_name = up.host;
  settings.tunnel_kind = "name";
  StartRelay(std::move(client), std::move(*up.socket), std::move(up.record), std::move(settings));
}

}  // namespace

Result<IpAddress> EnsureCaptureListeners(ProxyContext& ctx, const std::string& name) {
  std::optional<IpAddress> address = ctx.captures.AddressFor(name);
  if (!address) {
    return Error(
        ErrorCode::kPermissionDenied,
        "no capture address left (" + std::to_string(kMaxCaptureNames) + " names have one)");
  }
  if (ctx.captures.Listening(name)) return *address;
  const std::vector<uint16_t> ports = ctx.policy.CapturePorts(name);
  std::vector<ListenSpec> specs;
  for (uint16_t port : ports) specs.push_back({true, *address, port});
  ASSIGN_OR_RETURN(std::vector<UniqueFd> fds, ctx.netns.Listen(specs));
  for (size_t i = 0; i < fds.size(); ++i) {
    const uint16_t port = ports[i];
    // The handler is not a coroutine itself: it calls one, whose frame copies the name.
    ClientHandler handler = [name, port](ProxyContext& c, tcp::socket s) {
      return ServeCapturedClient(c, std::move(s), name, port);
    };
    const std::string what =
        "capture " + address->ToString() + ":" + std::to_string(port) + " (" + name + ")";
    RETURN_IF_ERROR(StartAcceptLoop(ctx, std::move(fds[i]), std::move(handler), what));
  }
  ctx.captures.SetListening(name);
  return *address;
}

}  // namespace corral::runtime::net
