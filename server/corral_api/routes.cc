// Every route of corral's own API (below /api/corral/v1/), in one table
// (server/http/route_table.h). Adding a route is adding a line here, its handler, and its
// operation in openapi.json (CorralApiTest.OpenApiDocumentMatchesTheRoutes checks both ways).
#include <string>

#include "runtime/spec/config.h"
#include "server/corral_api/api.h"
#include "server/corral_api/request.h"

namespace corral::server {
namespace {

HttpResponse MethodNotAllowed(const std::string& method, const std::string& allow) {
  HttpResponse r =
      ApiError{405, "method_not_allowed", method + " is not allowed here", "", {}}.ToResponse();
  r.headers.emplace_back("Allow", allow);
  return r;
}

HttpResponse Unknown(const std::string& path) {
  return ApiError{
      404, "not_found", "no route " + path + " (see /api/corral/v1/openapi.json)", "", {}}
      .ToResponse();
}

}  // namespace

const RouteTable<CorralApi::Handler>& CorralApi::Table() {
  // Lambdas, not member pointers: the handlers take different arguments.
  static const RouteTable<Handler> table = [] {
    RouteTable<Handler> t;
    t.Add("GET", "openapi.json",
          [](CorralApi&, Call&, Reply reply) {
            HttpResponse r;
            r.body = std::string(OpenApiDocument());
            reply(std::move(r));
          })
        .Add("GET", "sandboxes",
             [](CorralApi& api, Call&, Reply reply) { api.List(std::move(reply)); })
        .Add("POST", "sandboxes",
             [](CorralApi& api, Call& c, Reply reply) { api.Create(c.request, std::move(reply)); })
        .Add("GET", "sandboxes/{name}",
             [](CorralApi& api, Call& c, Reply reply) {
               api.Inspect(c.name, std::move(reply), false);
             })
        .Add("DELETE", "sandboxes/{name}",
             [](CorralApi& api, Call& c, Reply reply) { api.Remove(c.name, std::move(reply)); })
        .Add("POST", "sandboxes/{name}/pause",
             [](CorralApi& api, Call& c, Reply reply) {
               api.SetPaused(c.name, true, std::move(reply));
             })
        .Add("POST", "sandboxes/{name}/resume",
             [](CorralApi& api, Call& c, Reply reply) {
               api.SetPaused(c.name, false, std::move(reply));
             })
        .Add("POST", "sandboxes/{name}/exec",
             [](CorralApi& api, Call& c, Reply reply) {
               api.Exec(c.name, c.request, std::move(reply));
             })
        .Add("POST", "sandboxes/{name}/code",
             [](CorralApi& api, Call& c, Reply reply) {
               api.Code(c.name, c.request, std::move(reply));
             })
        .Add("GET", "sandboxes/{name}/stats",
             [](CorralApi& api, Call& c, Reply reply) {
               api.Inspect(c.name, std::move(reply), true);
             })
        .Add("GET", "sandboxes/{name}/files",
             [](CorralApi& api, Call& c, Reply reply) {
               api.ReadFile(c.name, c.request, std::move(reply));
             })
        .Add("PUT", "sandboxes/{name}/files",
             [](CorralApi& api, Call& c, Reply reply) {
               api.WriteFile(c.name, std::move(c.request), std::move(reply));
             })
        .Add("GET", "sandboxes/{name}/ls",
             [](CorralApi& api, Call& c, Reply reply) {
               api.ListDir(c.name, c.request, std::move(reply));
             })
        .Add("GET", "sandboxes/{name}/diff",
             [](CorralApi& api, Call& c, Reply reply) {
               api.DiffWorkspace(c.name, std::move(reply));
             })
        .Add("POST", "sandboxes/{name}/commit",
             [](CorralApi& api, Call& c, Reply reply) {
               api.CommitWorkspace(c.name, c.request, std::move(reply));
             })
        .Add("POST", "sandboxes/{name}/snapshot",
             [](CorralApi& api, Call& c, Reply reply) {
               api.Snapshot(c.name, c.request, std::move(reply));
             })
        .Add("POST", "sandboxes/{name}/fork",
             [](CorralApi& api, Call& c, Reply reply) {
               api.Fork(c.name, c.request, std::move(reply));
             })
        .Add("GET", "snapshots",
             [](CorralApi& api, Call&, Reply reply) { api.ListSnapshots(std::move(reply)); })
        .Add("GET", "snapshots/{name}",
             [](CorralApi& api, Call& c, Reply reply) {
               api.InspectSnapshot(c.name, std::move(reply));
             })
        .Add("DELETE", "snapshots/{name}",
             [](CorralApi& api, Call& c, Reply reply) {
               api.RemoveSnapshot(c.name, std::move(reply));
             })
        .Add("GET", "volumes",
             [](CorralApi& api, Call&, Reply reply) { api.ListVolumes(std::move(reply)); })
        .Add("POST", "volumes",
             [](CorralApi& api, Call& c, Reply reply) {
               api.CreateVolume(c.request, std::move(reply));
             })
        .Add("GET", "volumes/{name}",
             [](CorralApi& api, Call& c, Reply reply) {
               api.InspectVolume(c.name, std::move(reply));
             })
        .Add("DELETE", "volumes/{name}", [](CorralApi& api, Call& c, Reply reply) {
          api.RemoveVolume(c.name, c.request, std::move(reply));
        });
    return t;
  }();
  return table;
}

std::vector<std::pair<std::string, std::string>> CorralApi::Routes() {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string prefix = std::string(kCorralApiPrefix);
  for (const auto& route : Table().routes()) out.emplace_back(route.method, prefix + route.pattern);
  return out;
}

void CorralApi::Handle(HttpRequest request, Reply reply, std::string* route) {
  const std::string prefix = kCorralApiPrefix;
  const std::string rest = request.path.substr(std::min(prefix.size(), request.path.size()));
  *route = prefix + "*";
  auto match = Table().Find(request.method, rest);
  if (match.outcome == RouteOutcome::kNotFound) return reply(Unknown(request.path));
  *route = prefix + std::string(match.pattern);
  if (match.outcome == RouteOutcome::kMethodNotAllowed) {
    return reply(MethodNotAllowed(request.method, match.allow));
  }
  const std::string& name = match.params.Get("name");
  // Volumes' names and snapshots' tags follow the same rule (they may hold a '.').
  const bool volume =
      match.pattern.rfind("volumes/", 0) == 0 || match.pattern.rfind("snapshots/", 0) == 0;
  std::string why = volume ? (runtime::IsValidVolumeName(name) ? "" : runtime::kVolumeNameRule)
                           : SandboxNameProblem(name);
  if (!name.empty() && !why.empty()) {
    return reply(ApiError{400, "invalid_field", "name: " + why, "name", {}}.ToResponse());
  }
  Call call{name, std::move(request)};
  (*match.handler)(*this, call, std::move(reply));
}

}  // namespace corral::server
