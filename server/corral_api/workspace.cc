// corral's API for a workspace reviewed before it reaches the host
// (runtime/sandboxes/workspace_overlay.h): GET .../sandboxes/{name}/diff and
// POST .../sandboxes/{name}/commit, as `corral diff --json` and `corral commit --json`.
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "runtime/sandboxes/workspace_overlay.h"
#include "server/corral_api/api.h"
#include "server/corral_api/internal.h"
#include "server/corral_api/request.h"

namespace corral::server {

using nlohmann::json;

void CorralApi::DiffWorkspace(const std::string& name, Reply reply) {
  OnWorker(std::move(reply), [name] {
    auto changes = runtime::DiffWorkspace(name);
    if (!changes) return RuntimeError(changes.error(), "name");
    json list = json::array();
    for (const auto& c : *changes) {
      list.push_back({{"path", c.path},
                      {"kind", runtime::ChangeName(c.kind)},
                      {"type", std::string(1, c.type)}});
    }
    return HttpResponse::Json(200, {{"changes", list}, {"count", list.size()}});
  });
}

void CorralApi::CommitWorkspace(const std::string& name, const HttpRequest& request, Reply reply) {
  bool discard = false;
  if (!request.body.empty()) {
    auto parsed = ParseBodyObject(request.body);
    if (auto* error = std::get_if<ApiError>(&parsed)) return reply(error->ToResponse());
    const json* j = &std::get<json>(parsed);
    for (const auto& [key, value] : j->items()) {
      if (key != "discard") {
        return reply(
            ApiError{422, "invalid_field", key + ": unknown field (expected discard)", key, {}}
                .ToResponse());
      }
      if (!value.is_boolean()) {
        return reply(
            ApiError{422, "invalid_field", "discard: expected true or false", "discard", {}}
                .ToResponse());
      }
      discard = value.get<bool>();
    }
  }
  OnWorker(std::move(reply), [name, discard] {
    auto done = discard ? runtime::DiscardWorkspace(name) : runtime::CommitWorkspace(name);
    if (!done) return RuntimeError(done.error(), "name");
    return HttpResponse::Json(200, {{"sandbox", name},
                                    {"discarded", discard},
                                    {"written", done->written},
                                    {"removed", done->removed}});
  });
}

}  // namespace corral::server
