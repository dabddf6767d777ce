// Where each request goes, and the checks made before it gets there, in this order (the
// routes themselves are one table, router.cc's Routes(); 404 and 405 come from it):
//   1. Host must name this server (server/http/listen_address.h): else 400 (none) / 421.
//   2. GET /health: open, 200 {"status":"ok"}.
//   3. /api/* (every path and method, known or not): X-API-Key must equal the configured
//      key (constant time) else 401 "Unauthorized" — before any routing, as DeerFlow's
//      reference provisioner does. Then the provisioner API (docs/deerflow-contract.md §7):
//      GET /api/capabilities, POST/GET /api/sandboxes, GET/DELETE /api/sandboxes/{id}.
//   4. GET /metrics: the key too, unless server.metrics_need_key is false.
//   5. /sandboxes/{id}/{token}/<rest>: the token (or the key) must match, else the same
//      404 {"detail":"Not Found"} as for an unknown id; then AioApi::Handle(rest).
// No CORS headers are ever sent. Provisioner calls that create or remove sandboxes run on
// a small pool of their own, never on the I/O threads. Every answer is access-logged and
// counted under its route template (never a token). Thread-safe.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "server/aio/api.h"
#include "server/corral_api/api.h"
#include "server/http/access_log.h"
#include "server/http/listen_address.h"
#include "server/http/message.h"
#include "server/http/metrics.h"
#include "server/http/route_table.h"
#include "server/provisioner/sandbox_manager.h"

namespace corral::server {

struct RouterOptions {
  std::string api_key;   // empty: every /api/* call is refused, unless no_auth
  bool no_auth = false;  // unsafe.no_auth: /api/* without a key
  bool metrics_need_key = true;
  std::string base_dir;  // sandbox.base_dir, for the extra-mount checks
  // sandbox.resume_on_call: a call to a paused sandbox resumes it first (else 409).
  bool resume_on_call = true;
};

// (metric line, value) pairs filled in at scrape time, plus their # HELP/# TYPE lines.
using GaugeSource = std::function<
    std::pair<std::vector<std::pair<std::string, double>>, std::vector<std::string>>()>;

class Router {
 public:
  Router(RouterOptions options, HostCheck host_check, SandboxManager* manager, AioApi* aio,
         Metrics* metrics, AccessLog* access_log, boost::asio::thread_pool* blocking,
         GaugeSource gauges);

  void Handle(HttpRequest request, Reply reply);
  // corral's own API (/api/corral/v1/...), served once set; set before Start.
  void SetCorralApi(CorralApi* corral_api) { corral_api_ = corral_api; }

 private:
  // One request as a route's handler sees it.
  struct Call {
    HttpRequest request;
    PathParams params;        // what the route's {name} segments bound
    std::string* route;       // the route template for metrics and the access log
    std::string* sandbox_id;  // for the access log, once known
  };
  using Handler = void (Router::*)(Call& call, Reply reply);
  static const RouteTable<Handler>& Routes();

  bool KeyOk(const HttpRequest& request) const;
  void Health(Call& call, Reply reply);
  void MetricsPage(Call& call, Reply reply);
  // The provisioner API (docs/deerflow-contract.md §7).
  void Capabilities(Call& call, Reply reply);
  void CreateSandbox(Call& call, Reply reply);
  void ListSandboxes(Call& call, Reply reply);
  void GetSandbox(Call& call, Reply reply);
  void DeleteSandbox(Call& call, Reply reply);
  // Hand-overs to the other faces, which have tables of their own.
  void CorralApiCall(Call& call, Reply reply);
  void SandboxCall(Call& call, Reply reply);
  std::string SandboxUrl(const HttpRequest& request, const SandboxView& view) const;
  nlohmann::json ViewJson(const HttpRequest& request, const SandboxView& view) const;

  const RouterOptions options_;
  const HostCheck host_check_;
  SandboxManager* manager_;
  AioApi* aio_;
  Metrics* metrics_;
  AccessLog* access_log_;
  boost::asio::thread_pool* blocking_;
  GaugeSource gauges_;
  CorralApi* corral_api_ = nullptr;
};

}  // namespace corral::server
