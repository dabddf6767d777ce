// Serving the listening sockets that JailNetns made in the jail's namespace, on the
// proxy's I/O thread (in the host namespace): adopting an fd into an Asio acceptor, the
// accept loop that starts one session coroutine per client, and Spawn, which starts a
// coroutine whose escaping exception is logged rather than lost.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_context.h"

namespace corral::runtime::net {

// Starts `task` on `executor`, detached; `what` names it in the error an escaping
// exception is logged with.
void Spawn(const boost::asio::any_io_executor& executor, boost::asio::awaitable<void> task,
           const char* what);

// A session: serves one accepted client. The socket is the client's, in the jail's
// namespace; anything it connects to is opened on this (host) thread.
using ClientHandler =
    std::function<boost::asio::awaitable<void>(ProxyContext&, boost::asio::ip::tcp::socket)>;

// Accepts on `listener` (a listening TCP socket from JailNetns) until the process ends,
// starting `handler` for each client. Over kMaxPendingClients clients in their handshake,
// a new client is closed at once. `what` ("http proxy 127.0.0.1:3128") names the listener
// in stderr messages.
Status StartAcceptLoop(ProxyContext& ctx, UniqueFd listener, ClientHandler handler,
                       std::string what);

}  // namespace corral::runtime::net
