// corral's API for snapshots of an overlaid workspace and forks
// (runtime/sandboxes/workspace_snapshot.h): POST .../sandboxes/{name}/snapshot and
// .../fork, GET/DELETE .../snapshots[/{tag}]. A create from a snapshot is POST
// .../sandboxes with "from" (request.cc). The answers are `corral snapshot inspect`'s
// objects.
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "runtime/sandboxes/workspace_snapshot.h"
#include "runtime/volumes/sandbox_fork.h"
#include "server/corral_api/api.h"
#include "server/corral_api/internal.h"
#include "server/corral_api/request.h"

namespace corral::server {

using nlohmann::json;

namespace {

// A body of string fields among `allowed` (an empty body is {}).
std::variant<json, ApiError> ParseStringFields(const std::string& body,
                                               const std::vector<std::string>& allowed) {
  if (body.empty()) return json::object();
  auto parsed = ParseBodyObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  json j = std::get<json>(std::move(parsed));
  std::string expected;
  for (const std::string& a : allowed) expected += (expected.empty() ? "" : ", ") + a;
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return InvalidField(key, "unknown field (expected " + expected + ")");
    }
    if (!value.is_string() && !value.is_null()) return InvalidField(key, "expected a string");
  }
  return j;
}

std::string StringField(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

json SnapshotObject(const runtime::SnapshotRecord& record) {
  return runtime::SnapshotJson(record, runtime::SnapshotUsers(record));
}

}  // namespace

void CorralApi::Snapshot(const std::string& name, const HttpRequest& request, Reply reply) {
  auto parsed = ParseStringFields(request.body, {"tag"});
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply(error->ToResponse());
  std::string tag = StringField(std::get<json>(parsed), "tag");
  if (tag.empty()) return reply(InvalidField("tag", "required: the snapshot's tag").ToResponse());
  if (Status st = runtime::CheckSnapshotTag(tag); !st) {
    return reply(InvalidField("tag", st.error().message()).ToResponse());
  }
  OnWorker(std::move(reply), [name, tag] {
    auto snapshot = runtime::SnapshotSandbox(name, tag);
    if (!snapshot) {
      return RuntimeError(snapshot.error(),
                          snapshot.error().code() == ErrorCode::kAlreadyExists ? "tag" : "name");
    }
    return HttpResponse::Json(201, SnapshotObject(*snapshot));
  });
}

void CorralApi::Fork(const std::string& name, const HttpRequest& request, Reply reply) {
  auto parsed = ParseStringFields(request.body, {"name", "tag"});
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply(error->ToResponse());
  const json& j = std::get<json>(parsed);
  const std::string new_name = StringField(j, "name");
  if (std::string why = SandboxNameProblem(new_name); new_name.empty() || !why.empty()) {
    return reply(InvalidField("name", new_name.empty() ? "required: the new sandbox's name" : why)
                     .ToResponse());
  }
  const std::string tag = StringField(j, "tag");
  if (!tag.empty()) {
    if (Status st = runtime::CheckSnapshotTag(tag); !st) {
      return reply(InvalidField("tag", st.error().message()).ToResponse());
    }
  }
  OnWorker(std::move(reply), [this, name, new_name, tag] {
    runtime::CreateRequest r;
    r.name = new_name;
    auto fork = runtime::ForkSandbox(name, std::move(r), tag);
    if (!fork) return RuntimeError(fork.error(), "name");
    {
      std::lock_guard<std::mutex> lock(children_mu_);
      children_.insert(fork->sandbox.init_pid);
    }
    auto info = runtime::InspectSandbox(fork->sandbox.name);
    if (!info) return RuntimeError(info.error(), "name");
    json created = server::SandboxInfoJson(*info);
    created["snapshot"] = fork->snapshot.tag;
    created["parent"] = name;
    return HttpResponse::Json(201, created);
  });
}

void CorralApi::ListSnapshots(Reply reply) {
  OnWorker(std::move(reply), [] {
    if (Status st = runtime::FinishWorkspaceSnapshots(); !st) return RuntimeError(st.error(), "");
    json list = json::array();
    for (const auto& s : runtime::ListSnapshots()) list.push_back(SnapshotObject(s));
    auto budget = runtime::ReadSnapshotBudget();
    if (!budget) return RuntimeError(budget.error(), "");
    const size_t count = list.size();
    return HttpResponse::Json(200, {{"snapshots", std::move(list)},
                                    {"count", count},
                                    {"budget_bytes", budget->budget_bytes},
                                    {"used_bytes", budget->used_bytes}});
  });
}

void CorralApi::InspectSnapshot(const std::string& tag, Reply reply) {
  OnWorker(std::move(reply), [tag] {
    auto snapshot = runtime::ReadSnapshot(tag);
    if (!snapshot) return RuntimeError(snapshot.error(), "tag");
    return HttpResponse::Json(200, SnapshotObject(*snapshot));
  });
}

void CorralApi::RemoveSnapshot(const std::string& tag, Reply reply) {
  OnWorker(std::move(reply), [tag] {
    if (Status st = runtime::RemoveSnapshot(tag); !st) return RuntimeError(st.error(), "tag");
    return HttpResponse::Json(200, {{"tag", tag}, {"removed", true}});
  });
}

}  // namespace corral::server
