// The HTTP/1.1 server of `corral serve`: Boost.Beast on Asio, asynchronous, on a few I/O
// threads (a shell call may wait 600 s; it never holds a thread). It turns Beast messages
// into the plain values of server/http/message.h and back, and enforces, before any
// handler runs (values from the `server:` config section, runtime/spec/server_config.h):
//   - header size (request line + headers; default 16 KiB)          -> 431, then close
//   - body size (default 140 MiB: a 100 MiB file as base64 in JSON) -> 413, then close
//   - header timeout (10 s), body read / response write timeout (300 s), keep-alive idle
//     timeout (75 s): a slow or silent client is disconnected (slowloris)
//   - connections: max_connections in all, max_connections_per_client per peer address
//     (TCP)                                                          -> 429, then close
//   - requests being handled at once: max_in_flight (GET /health exempt)
//                                                                   -> 429 + Retry-After: 1
// Malformed HTTP -> 400 and close. Keep-alive is supported; `Expect: 100-continue` is
// answered. Listens on TCP or a unix socket (server/http/listen_address.h). Thread-safe.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "runtime/spec/server_config.h"
#include "server/http/listen_address.h"
#include "server/http/message.h"
#include "server/http/request_text.h"

namespace corral::server {

// Called on an I/O thread; must answer through `reply` exactly once, from any thread.
using Handler = std::function<void(HttpRequest request, Reply reply)>;
// A request the server answered itself (limits, bad HTTP), for the access log.
using RejectLog = std::function<void(const std::string& client, int status, const char* why)>;

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, const runtime::ServerConfig& limits, Handler handler,
             RejectLog reject_log);
  ~HttpServer();

  // Binds and listens (a stale unix socket file is replaced; the new one is mode 0660).
  Status Listen(const ListenAddress& address);
  uint16_t bound_port() const { return bound_port_; }
  void Start();          // accepting
  void StopAccepting();  // SIGTERM: no new connections; requests on open ones get 503

  size_t in_flight() const;
  size_t connections() const;

  // For the sessions (server/http/server.cc).
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  uint16_t bound_port_ = 0;
};

}  // namespace corral::server
