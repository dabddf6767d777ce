#include "runtime/sandboxes/snapshot_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/files.h"
#include "base/tree_at.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/config.h"
#include "runtime/spec/sizes.h"

namespace corral::runtime {

namespace {

constexpr const char* kRecordFile = "snapshot.json";
constexpr const char* kPartialSuffix = ".partial";

nlohmann::json RecordToJson(const SnapshotRecord& r) {
  return {{"version", r.version},
          {"tag", r.tag},
          {"sandbox", r.sandbox},
          {"owner_uid", r.owner_uid},
          {"created_at", r.created_at},
          {"size_bytes", r.size_bytes},
          {"tmp_bytes", r.tmp_bytes},
          {"entries", r.entries},
          {"user_data_dir", r.user_data_dir},
          {"layers", r.layers}};
}

Result<SnapshotRecord> RecordFromText(const std::string& text, const std::string& where) {
  try {
    const auto j = nlohmann::json::parse(text);
    SnapshotRecord r;
    j.at("version").get_to(r.version);
    j.at("tag").get_to(r.tag);
    j.at("sandbox").get_to(r.sandbox);
    j.at("owner_uid").get_to(r.owner_uid);
    j.at("created_at").get_to(r.created_at);
    j.at("size_bytes").get_to(r.size_bytes);
    r.tmp_bytes = j.value("tmp_bytes", int64_t{0});
    j.at("entries").get_to(r.entries);
    j.at("user_data_dir").get_to(r.user_data_dir);
    j.at("layers").get_to(r.layers);
    if (r.layers.empty()) return Error(ErrorCode::kIo, where + ": a snapshot without a layer");
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kIo, where + ": corrupt snapshot record: " + e.what());
  }
}

}  // namespace

Result<std::string> SnapshotsDir() {
  ASSIGN_OR_RETURN(std::string state, StateDir());
  for (const std::string& d : {state, state + "/snapshots"}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno(errno, d);
  }
  return state + "/snapshots";
}

Status CheckSnapshotTag(const std::string& tag) {
  if (IsValidVolumeName(tag) && !tag.ends_with(kPartialSuffix)) return Ok();
  return Error(ErrorCode::kInvalidArgument,
               "snapshot tag '" + tag +
                   "': 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or "
                   "digit (and not ending in .partial)");
}

std::string SnapshotLayerDir(const std::string& snapshots_dir, const std::string& tag) {
  return snapshots_dir + "/" + tag + "/layer";
}

Result<UniqueFd> LockSnapshots(bool shared) {
  ASSIGN_OR_RETURN(std::string dir, SnapshotsDir());
  const std::string path = dir + "/.lock";
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno(errno, path);
  while (::flock(fd.get(), shared ? LOCK_SH : LOCK_EX) != 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "flock " + path);
  }
  return fd;
}

Status WriteSnapshotRecord(const std::string& dir, const SnapshotRecord& record) {
  return WriteFileWhole(dir + "/" + kRecordFile, RecordToJson(record).dump(2) + "\n");
}

Result<SnapshotRecord> ReadSnapshot(const std::string& tag) {
  RETURN_IF_ERROR(CheckSnapshotTag(tag));
  ASSIGN_OR_RETURN(std::string dir, SnapshotsDir());
  const std::string path = dir + "/" + tag + "/" + kRecordFile;
  auto text = ReadFile(path);
  if (!text) {
    if (text.error().sys_errno() == ENOENT) {
      return Error(ErrorCode::kNotFound, "no snapshot '" + tag + "' (corral snapshot ls)");
    }
    return text.error();
  }
  return RecordFromText(*text, path);
}

std::vector<SnapshotRecord> ListSnapshots(std::vector<std::string>* unreadable) {
  std::vector<SnapshotRecord> out;
  auto dir = SnapshotsDir();
  if (!dir) return out;
  UniqueFd fd(::open(dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return out;
  std::vector<std::string> names = EntryNames(fd.get());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    struct stat st;
    if (name[0] == '.' || name.ends_with(kPartialSuffix) ||
        ::fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
      continue;
    }
    auto record = ReadSnapshot(name);
    if (record) {
      out.push_back(std::move(*record));
    } else if (unreadable != nullptr) {
      unreadable->push_back(name + ": " + record.error().message());
    }
  }
  return out;
}

std::vector<std::string> SnapshotUsers(const SnapshotRecord& record) {
  std::vector<std::string> users;
  const std::string& layer = record.layers.front();
  for (const SandboxInfo& info : ListSandboxes(nullptr, Inspect::kLiveness)) {
    const auto& layers = info.record.spec.workspace_layers;
    if (std::find(layers.begin(), layers.end(), layer) != layers.end()) {
      users.push_back("sandbox " + info.record.name);
    }
  }
  for (const SnapshotRecord& other : ListSnapshots()) {
    if (other.tag == record.tag) continue;
    if (std::find(other.layers.begin(), other.layers.end(), layer) != other.layers.end()) {
      users.push_back("snapshot " + other.tag);
    }
  }
  return users;
}

Status RemoveSnapshot(const std::string& tag) {
  RETURN_IF_ERROR(CheckSnapshotTag(tag));
  ASSIGN_OR_RETURN(UniqueFd lock, LockSnapshots());
  ASSIGN_OR_RETURN(SnapshotRecord record, ReadSnapshot(tag));
  std::vector<std::string> users = SnapshotUsers(record);
  if (!users.empty()) {
    std::string list;
    for (const std::string& u : users) list += (list.empty() ? "" : ", ") + u;
    return Error(
        ErrorCode::kFailedPrecondition,
        "snapshot " + tag + " is in use (its layer lies below: " + list + "); remove those first");
  }
  ASSIGN_OR_RETURN(std::string dir, SnapshotsDir());
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, dir);
  // Renamed aside first: the tag is free at once, and a removal cut short leaves
  // .<tag>.removing, which the next snapshot taken removes (FinishWorkspaceSnapshots).
  const std::string aside = "." + tag + ".removing";
  if (::renameat(fd.get(), tag.c_str(), fd.get(), aside.c_str()) != 0) {
    return Error::FromErrno(errno, "rename " + dir + "/" + tag);
  }
  return RemoveAt(fd.get(), aside);
}

Result<SnapshotBudget> ReadSnapshotBudget() {
  ASSIGN_OR_RETURN(std::string dir, SnapshotsDir());
  SnapshotBudget b;
  if (auto text = ReadFile(dir + "/budget")) {
    auto bytes = ParseSize(*text == "" ? "0" : text->substr(0, text->find('\n')));
    if (!bytes) return bytes.error().WithContext(dir + "/budget");
    b.budget_bytes = *bytes;
  }
  for (const SnapshotRecord& r : ListSnapshots()) b.used_bytes += r.size_bytes;
  return b;
}

Status SetSnapshotBudget(int64_t bytes) {
  ASSIGN_OR_RETURN(std::string dir, SnapshotsDir());
  return WriteFileWhole(dir + "/budget", std::to_string(bytes) + "\n");
}

nlohmann::json SnapshotJson(const SnapshotRecord& record, const std::vector<std::string>& users) {
  nlohmann::json j = RecordToJson(record);
  j.erase("version");
  j.erase("layers");
  j["depth"] = record.layers.size();
  j["used_by"] = users;
  return j;
}

}  // namespace corral::runtime
