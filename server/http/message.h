// The HTTP request and response as the daemon's handlers see them: plain values, with no
// Boost.Beast type in sight, so that every handler (provisioner API, AIO API, corral's own
// API) can be unit-tested without a socket. server/http/server.h turns Beast messages into
// these and back; it has already enforced the size limits, the timeouts and the API key
// (for /api/*) by the time a handler runs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace corral::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", "DELETE", ...
  std::string path;    // percent-decoded path, without the query ("/api/sandboxes/abc")
  std::multimap<std::string, std::string> query;  // percent-decoded names and values
  std::map<std::string, std::string> headers;     // names lower-case
  std::string body;
  std::string client;  // peer address, for the access log only

  // The first value of query parameter `name`, or nullptr.
  const std::string* Query(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? nullptr : &it->second;
  }
  const std::string* Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? nullptr : &it->second;
  }
};

// The writing end of a streamed response body (server-sent events, or any chunked body),
// implemented by server/http/server.cc. Thread-safe; cheap to call from any thread.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Queues `data` as one HTTP chunk, written in order. Ignored after End() or once the
  // client is gone. Unbounded: the producer bounds what it sends (an exec's output cap).
  virtual void Send(std::string data) = 0;
  // Writes the last chunk, then closes the connection (a streamed response never keeps
  // the connection alive: the end of the socket is how a client's going is seen).
  virtual void End() = 0;
};

// A body produced over time. The server writes the status and headers (chunked transfer
// encoding, no Content-Length), then calls `start` once on an I/O thread. `client_gone`
// (optional) is called at most once, on an I/O thread, if the client disconnects (EOF or
// an error on its socket, or a chunk it does not take within the write timeout) before
// End(); the producer should then stop its work (an exec ends its command).
struct StreamBody {
  std::function<void(std::shared_ptr<ResponseStream>)> start;
  std::function<void()> client_gone;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::shared_ptr<StreamBody> stream;  // set: `body` is ignored, the body is streamed

  static HttpResponse Json(int status, const nlohmann::json& body) {
    HttpResponse r;
    r.status = status;
    r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return r;
  }
  static HttpResponse Text(int status, std::string text) {
    HttpResponse r;
    r.status = status;
    r.content_type = "text/plain; charset=utf-8";
    r.body = std::move(text);
    return r;
  }
};

// How a handler answers: call it exactly once, from any thread, possibly long after the
// handler returned (a shell command may run for 600 s: the handler must not hold the
// server's thread while it waits).
using Reply = std::function<void(HttpResponse)>;

}  // namespace corral::server
