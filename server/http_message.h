// The HTTP request and response as the daemon's handlers see them: plain values, with no
// Boost.Beast type in sight, so that every handler (provisioner API, AIO API, corral's own
// API) can be unit-tested without a socket. server/http_server.h turns Beast messages into
// these and back; it has already enforced the size limits, the timeouts and the API key
// (for /api/*) by the time a handler runs.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers

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
