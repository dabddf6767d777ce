// corral's API for named volumes (runtime/volumes/): /api/corral/v1/volumes[/{name}]. A
// sandbox mounts one with a `{"volume": NAME, "container_path": ...}` entry of its spec's
// mounts (request.cc); the answers are `corral volume inspect`'s objects.
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "runtime/spec/config.h"
#include "runtime/spec/sizes.h"
#include "runtime/volumes/volume_info.h"
#include "server/corral_api/api.h"
#include "server/corral_api/internal.h"
#include "server/corral_api/request.h"

namespace corral::server {

using nlohmann::json;

namespace {

// {"name": "data", "size": "1G" | 1073741824 | null}
std::variant<std::pair<std::string, std::optional<int64_t>>, ApiError> ParseVolumeCreate(
    const std::string& body) {
  auto parsed = ParseBodyObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  const json& j = std::get<json>(parsed);
  for (const auto& [key, value] : j.items()) {
    if (key != "name" && key != "size")
      return InvalidField(key, "unknown field (expected name, size)");
  }
  if (!j.contains("name") || !j["name"].is_string()) {
    return InvalidField("name", "required: the volume's name (a string)");
  }
  std::string name = j["name"].get<std::string>();
  if (!runtime::IsValidVolumeName(name)) return InvalidField("name", runtime::kVolumeNameRule);
  std::optional<int64_t> size;
  if (j.contains("size") && !j["size"].is_null()) {
    const json& s = j["size"];
    if (s.is_number_integer() && s.get<int64_t>() > 0) {
      size = s.get<int64_t>();
    } else if (s.is_string()) {
      auto bytes = runtime::ParseSize(s.get<std::string>());
      if (!bytes) return InvalidField("size", bytes.error().message());
      size = *bytes;
    } else {
      return InvalidField("size", "expected a size: bytes, or a string such as \"1G\"");
    }
  }
  return std::make_pair(std::move(name), size);
}

}  // namespace

void CorralApi::ListVolumes(Reply reply) {
  OnWorker(std::move(reply), [] {
    std::vector<runtime::UnreadableVolume> unreadable;
    json list = json::array();
    for (const auto& info : runtime::ListVolumes(/*with_usage=*/true, &unreadable)) {
      list.push_back(runtime::VolumeInfoJson(info));
    }
    json body = {{"volumes", list}, {"count", list.size()}};
    if (!unreadable.empty()) {
      json bad = json::array();
      for (const auto& u : unreadable) bad.push_back({{"name", u.name}, {"why", u.why}});
      body["unreadable"] = std::move(bad);
    }
    return HttpResponse::Json(200, body);
  });
}

void CorralApi::CreateVolume(const HttpRequest& request, Reply reply) {
  auto parsed = ParseVolumeCreate(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply(error->ToResponse());
  OnWorker(std::move(reply), [create = std::get<0>(std::move(parsed))] {
    auto store = runtime::VolumeStore::Open();
    if (!store) return RuntimeError(store.error(), "");
    auto record = store->Create(create.first, create.second);
    if (!record) return RuntimeError(record.error(), "name");
    auto info = runtime::InspectVolume(record->name);
    if (!info) return RuntimeError(info.error(), "name");
    return HttpResponse::Json(201, runtime::VolumeInfoJson(*info));
  });
}

void CorralApi::InspectVolume(const std::string& name, Reply reply) {
  OnWorker(std::move(reply), [name] {
    auto info = runtime::InspectVolume(name);
    if (!info) return RuntimeError(info.error(), "name");
    return HttpResponse::Json(200, runtime::VolumeInfoJson(*info));
  });
}

void CorralApi::RemoveVolume(const std::string& name, const HttpRequest& request, Reply reply) {
  const std::string* force_text = request.Query("force");
  if (force_text && *force_text != "true" && *force_text != "false") {
    return reply(InvalidField("force", "expected true or false").ToResponse());
  }
  const bool force = force_text && *force_text == "true";
  OnWorker(std::move(reply), [name, force] {
    if (Status st = runtime::RemoveVolume(name, force); !st)
      return RuntimeError(st.error(), "name");
    return HttpResponse::Json(200, {{"name", name}, {"removed", true}});
  });
}

}  // namespace corral::server
