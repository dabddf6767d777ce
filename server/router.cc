#include "server/router.h"

#include <boost/asio/post.hpp>
#include <chrono>
#include <memory>

#include "server/http/auth.h"
#include "server/http/request_text.h"
#include "server/provisioner/provision_request.h"

namespace corral::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

HttpResponse Detail(int status, const std::string& detail) {
  return HttpResponse::Json(status, {{"detail", detail}});
}
HttpResponse NotFound() { return Detail(404, "Not Found"); }

struct CallContext {
  Clock::time_point start = Clock::now();
  std::string client, method, route = "-", sandbox_id;
};

}  // namespace

Router::Router(RouterOptions options, HostCheck host_check, SandboxManager* manager, AioApi* aio,
               Metrics* metrics, AccessLog* access_log, boost::asio::thread_pool* blocking,
               GaugeSource gauges)
    : options_(std::move(options)),
      host_check_(std::move(host_check)),
      manager_(manager),
      aio_(aio),
      metrics_(metrics),
      access_log_(access_log),
      blocking_(blocking),
      gauges_(std::move(gauges)) {}

bool Router::KeyOk(const HttpRequest& request) const {
  if (options_.no_auth && options_.api_key.empty()) return true;
  const std::string* given = request.Header("x-api-key");
  return given != nullptr && ConstantTimeEquals(*given, options_.api_key);
}

std::string Router::SandboxUrl(const HttpRequest& request, const SandboxView& view) const {
  // The Host header has been checked against the names of this server by now.
  const std::string* host = request.Header("host");
  return "http://" + ToLower(host ? *host : host_check_.expected()) + "/sandboxes/" +
         view.sandbox_id + "/" + view.token;
}

json Router::ViewJson(const HttpRequest& request, const SandboxView& view) const {
  return {{"sandbox_id", view.sandbox_id},
          {"sandbox_url", SandboxUrl(request, view)},
          {"status", view.status}};
}

const RouteTable<Router::Handler>& Router::Routes() {
  static const RouteTable<Handler> table = [] {
    RouteTable<Handler> t;
    t.Add("GET", "/health", &Router::Health)
        .Add("GET", "/metrics", &Router::MetricsPage)
        .Add("GET", "/api/capabilities", &Router::Capabilities)
        .Add("POST", "/api/sandboxes", &Router::CreateSandbox)
        .Add("GET", "/api/sandboxes", &Router::ListSandboxes)
        // {id...}: an id with a slash in it is a 400 naming the problem, not a 404.
        .Add("GET", "/api/sandboxes/{id...}", &Router::GetSandbox)
        .Add("DELETE", "/api/sandboxes/{id...}", &Router::DeleteSandbox)
        .Add("*", "/api/corral/v1/{rest...}", &Router::CorralApiCall)
        .Add("*", "/sandboxes/{id}/{token}/{rest...}", &Router::SandboxCall);
    return t;
  }();
  return table;
}

void Router::Handle(HttpRequest request, Reply reply) {
  auto ctx = std::make_shared<CallContext>();
  ctx->client = request.client;
  ctx->method = request.method;
  Reply logged = [this, ctx, reply = std::move(reply)](HttpResponse response) {
    const double seconds = std::chrono::duration<double>(Clock::now() - ctx->start).count();
    metrics_->Record(ctx->method, ctx->route, response.status, seconds);
    if (access_log_ != nullptr) {
      access_log_->Write({ctx->client, ctx->method, ctx->route, ctx->sandbox_id, response.status,
                          response.body.size(), seconds * 1000});
    }
    reply(std::move(response));
  };
  const std::string* host = request.Header("host");
  if (host == nullptr || host->empty()) {
    return logged(Detail(400, "missing Host header"));
  }
  if (!host_check_.Accepts(*host)) {
    return logged(Detail(421, "the Host header does not name this server (expected " +
                                  host_check_.expected() + ")"));
  }
  const std::string& path = request.path;
  if (path == "/api" || path.rfind("/api/", 0) == 0) {
    // Every /api path, known or not, needs the key before any routing (DeerFlow's
    // reference provisioner does the same): an unknown path tells a caller nothing.
    ctx->route = "/api/*";
    if (!KeyOk(request)) return logged(HttpResponse::Text(401, "Unauthorized"));
  }
  auto match = Routes().Find(request.method, path);
  if (match.outcome == RouteOutcome::kNotFound) return logged(NotFound());
  ctx->route = RouteLabel(match.pattern);
  if (match.outcome == RouteOutcome::kMethodNotAllowed) {
    HttpResponse refused = Detail(405, "Method Not Allowed");
    refused.headers.emplace_back("Allow", match.allow);
    return logged(std::move(refused));
  }
  Call call{std::move(request), std::move(match.params), &ctx->route, &ctx->sandbox_id};
  (this->*(*match.handler))(call, std::move(logged));
}

void Router::Health(Call&, Reply reply) { reply(HttpResponse::Json(200, {{"status", "ok"}})); }

void Router::MetricsPage(Call& call, Reply reply) {
  if (options_.metrics_need_key && !KeyOk(call.request)) {
    return reply(HttpResponse::Text(401, "Unauthorized"));
  }
  auto [gauges, help] = gauges_();
  HttpResponse r = HttpResponse::Text(200, metrics_->Render(gauges, help));
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  reply(std::move(r));
}

void Router::Capabilities(Call&, Reply reply) {
  reply(
      HttpResponse::Json(200, {{"lark_cli_init_image", false}, {"lark_cli_broker_image", false}}));
}

void Router::CreateSandbox(Call& call, Reply reply) {
  boost::asio::post(*blocking_, [this, request = std::move(call.request), reply] {
    auto parsed = ParseCreateRequest(request.body, options_.base_dir);
    if (auto* error = std::get_if<RequestError>(&parsed)) {
      return reply(HttpResponse::Json(error->status, error->body));
    }
    CreateResult r = manager_->Create(std::get<CreateParams>(parsed));
    if (r.status != 200) {
      HttpResponse failure = Detail(r.status, r.detail);
      if (r.status == 429) failure.headers.emplace_back("Retry-After", "5");
      return reply(std::move(failure));
    }
    reply(HttpResponse::Json(200, ViewJson(request, r.view)));
  });
}

void Router::ListSandboxes(Call& call, Reply reply) {
  boost::asio::post(*blocking_, [this, request = std::move(call.request), reply] {
    json list = json::array();
    for (const SandboxView& v : manager_->List()) list.push_back(ViewJson(request, v));
    const size_t count = list.size();
    reply(HttpResponse::Json(200, {{"sandboxes", std::move(list)}, {"count", count}}));
  });
}

void Router::GetSandbox(Call& call, Reply reply) {
  std::string id = call.params.Get("id");
  if (std::string why = SandboxIdProblem(id); !why.empty()) return reply(Detail(400, why));
  boost::asio::post(*blocking_, [this, request = std::move(call.request), reply, id] {
    auto view = manager_->Find(id);
    if (!view) return reply(Detail(404, "Sandbox '" + id + "' not found"));
    reply(HttpResponse::Json(200, ViewJson(request, *view)));
  });
}

void Router::DeleteSandbox(Call& call, Reply reply) {
  std::string id = call.params.Get("id");
  if (std::string why = SandboxIdProblem(id); !why.empty()) return reply(Detail(400, why));
  boost::asio::post(*blocking_, [this, reply, id] {
    Status st = manager_->Delete(id);
    if (!st) return reply(Detail(500, "Partial cleanup: " + st.error().message()));
    reply(HttpResponse::Json(200, {{"ok", true}, {"sandbox_id", id}}));
  });
}

void Router::CorralApiCall(Call& call, Reply reply) {
  if (corral_api_ == nullptr) return reply(NotFound());
  corral_api_->Handle(std::move(call.request), std::move(reply), call.route);
}

void Router::SandboxCall(Call& call, Reply reply) {
  *call.route = "/sandboxes/*";
  const std::string& id = call.params.Get("id");
  if (!SandboxIdProblem(id).empty()) return reply(NotFound());
  auto ref = manager_->BeginCall(id, call.params.Get("token"),
                                 KeyOk(call.request) && !options_.api_key.empty());
  if (!ref) return reply(NotFound());
  // Only now: a caller without the token must not add label values to /metrics.
  const std::string& rest = call.params.Get("rest");
  *call.route = "/sandboxes/{id}/{token}/" + RouteTemplate(rest);
  *call.sandbox_id = id;
  Reply done = [this, id, reply = std::move(reply)](HttpResponse response) {
    manager_->EndCall(id);
    reply(std::move(response));
  };
  if (!manager_->Paused(id))
    return aio_->Handle(*ref, rest, std::move(call.request), std::move(done));
  // Paused (sandbox.idle_action pause, or `corral pause` on the host): thawed first, off the
  // I/O thread (it waits for the kernel), so that the agent never sees "paused".
  if (!options_.resume_on_call) {
    return done(Detail(
        409, "sandbox " + id + " is paused and sandbox.resume_on_call is off; resume it first"));
  }
  boost::asio::post(
      *blocking_, [this, ref = *ref, rest = std::string(rest), request = std::move(call.request),
                   done = std::move(done)]() mutable {
        if (Status st = manager_->Resume(ref.sandbox_id); !st) {
          return done(Detail(500, "resuming the paused sandbox failed: " + st.error().message()));
        }
        aio_->Handle(ref, rest, std::move(request), std::move(done));
      });
}

}  // namespace corral::server
