#include "runtime/volumes/volume_info.h"

namespace corral::runtime {

namespace {

VolumeInfo InfoOf(const VolumeStore& store, VolumeRecord record, bool with_usage) {
  VolumeInfo info;
  info.path = store.PathOf(record);
  if (with_usage) info.usage = store.Usage(record);
  info.users = VolumeUsers(store, record.name);
  info.record = std::move(record);
  return info;
}

}  // namespace

Result<VolumeInfo> InspectVolume(const std::string& name, bool with_usage) {
  ASSIGN_OR_RETURN(VolumeStore store, VolumeStore::Open());
  ASSIGN_OR_RETURN(VolumeRecord record, store.Find(name));
  return InfoOf(store, std::move(record), with_usage);
}

std::vector<VolumeInfo> ListVolumes(bool with_usage, std::vector<UnreadableVolume>* unreadable) {
  std::vector<VolumeInfo> out;
  auto store = VolumeStore::Open();
  if (!store) {
    if (unreadable != nullptr) unreadable->push_back({"", store.error().message()});
    return out;
  }
  for (VolumeRecord& record : store->List(unreadable)) {
    out.push_back(InfoOf(*store, std::move(record), with_usage));
  }
  return out;
}

Status RemoveVolume(const std::string& name, bool force) {
  ASSIGN_OR_RETURN(VolumeStore store, VolumeStore::Open());
  auto record = store.Find(name);
  if (!record && record.error().code() != ErrorCode::kIo) return record.error();
  // kIo: a create cut short or a corrupt record; nothing can mount it, so it just goes.
  ASSIGN_OR_RETURN(UniqueFd lock, LockVolumeAttach(store, name));
  if (record && !force) {
    std::vector<VolumeUser> users = VolumeUsers(store, name);
    if (!users.empty()) {
      std::string who;
      for (const VolumeUser& u : users) who += (who.empty() ? "" : ", ") + u.what;
      return Error(ErrorCode::kFailedPrecondition,
                   "volume " + name + " is in use by " + who +
                       "; remove those first, or -f (force) removes its files now");
    }
  }
  return store.RemoveDir(name);
}

nlohmann::json VolumeInfoJson(const VolumeInfo& info) {
  const VolumeRecord& r = info.record;
  nlohmann::json j = {{"name", r.name},    {"kind", r.size_bytes ? "image" : "directory"},
                      {"path", info.path}, {"created_at", r.created_at},
                      {"uid", r.uid},      {"gid", r.gid}};
  j["size_bytes"] = r.size_bytes ? nlohmann::json(*r.size_bytes) : nlohmann::json(nullptr);
  if (info.usage) {
    j["used_bytes"] = info.usage->bytes;
    if (!r.size_bytes) j["files"] = info.usage->files;
  }
  nlohmann::json users = nlohmann::json::array();
  for (const VolumeUser& u : info.users) users.push_back(u.what);
  j["mounted_by"] = users;
  return j;
}

}  // namespace corral::runtime
