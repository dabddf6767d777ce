#include "runtime/netproxy/proxy_listen.h"

#include <spdlog/spdlog.h>

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <exception>

#include "runtime/netproxy/proxy_awaitable.h"

namespace corral::runtime::net {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// After an accept error other than the listener closing (EMFILE, ENOBUFS): wait before
// the next accept instead of spinning on the same error.
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);

asio::awaitable<void> AcceptLoop(ProxyContext& ctx, tcp::acceptor acceptor, ClientHandler handler,
                                 std::string what) {
  bool warned_pending = false;
  for (;;) {
    boost::system::error_code ec;
    tcp::socket client =
        co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
    if (ec) {
      spdlog::warn("{}: accept: {}", what, ec.message());
      asio::steady_timer pause(acceptor.get_executor(), kAcceptRetryDelay);
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (ctx.pending_clients >= kMaxPendingClients) {
      if (!warned_pending)
        spdlog::warn("{}: {} clients in their handshake; closing new ones", what,
                     kMaxPendingClients);
      warned_pending = true;
      client.close(ec);
      continue;
    }
    warned_pending = false;
    Spawn(acceptor.get_executor(), handler(ctx, std::move(client)), what.c_str());
  }
}

}  // namespace

void Spawn(const asio::any_io_executor& executor, asio::awaitable<void> task, const char* what) {
  asio::co_spawn(executor, std::move(task), [name = std::string(what)](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", name, e.what());
    } catch (...) {
      spdlog::error("{}: unknown exception", name);
    }
  });
}

Status StartAcceptLoop(ProxyContext& ctx, UniqueFd listener, ClientHandler handler,
                       std::string what) {
  tcp::acceptor acceptor(*ctx.io);
  boost::system::error_code ec;
  acceptor.assign(tcp::v4(), listener.get(), ec);
  if (ec) return Error(ErrorCode::kIo, what + ": adopting the listening socket: " + ec.message());
  listener.Release();  // the acceptor owns it now
  const asio::any_io_executor executor = acceptor.get_executor();
  Spawn(executor, AcceptLoop(ctx, std::move(acceptor), std::move(handler), what), "accept loop");
  return Ok();
}

}  // namespace corral::runtime::net
