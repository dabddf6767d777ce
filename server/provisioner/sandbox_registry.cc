#include "server/provisioner/sandbox_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/files.h"
#include "base/json_input.h"
#include "server/provisioner/provision_request.h"

namespace corral::server {

using nlohmann::json;

json EntryToJson(const RegistryEntry& e) {
  return {{"version", 1},
          {"sandbox_id", e.sandbox_id},
          {"corral_name", e.corral_name},
          {"token", e.token},
          {"user_id", e.user_id},
          {"thread_id", e.thread_id ? json(*e.thread_id) : json(nullptr)},
          {"user_data", e.user_data},
          {"created_at", e.created_at}};
}

Result<RegistryEntry> EntryFromJson(const json& j) {
  auto bad = [](const std::string& field) {
    return Error(ErrorCode::kInvalidArgument, "registry entry: bad or missing " + field);
  };
  if (!j.is_object()) return bad("object");
  RegistryEntry e;
  for (auto [field, out] :
       {std::pair{"sandbox_id", &e.sandbox_id}, std::pair{"corral_name", &e.corral_name},
        std::pair{"token", &e.token}, std::pair{"user_id", &e.user_id},
        std::pair{"user_data", &e.user_data}}) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) return bad(field);
    *out = it->get<std::string>();
  }
  if (!SandboxIdProblem(e.sandbox_id).empty()) return bad("sandbox_id");
  if (e.token.size() < 32) return bad("token");
  auto thread = j.find("thread_id");
  if (thread != j.end() && thread->is_string()) e.thread_id = thread->get<std::string>();
  auto created = j.find("created_at");
  if (created != j.end() && created->is_number()) e.created_at = created->get<double>();
  return e;
}

Result<SandboxRegistry> SandboxRegistry::Open(const std::string& dir) {
  for (const std::string& d : {dir, dir + "/sandboxes"}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno(errno, d);
    struct stat st;
    if (::lstat(d.c_str(), &st) != 0) return Error::FromErrno(errno, d);
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      return Error(ErrorCode::kPermissionDenied, d + ": not a directory of ours");
    }
    if ((st.st_mode & 077) != 0 && ::chmod(d.c_str(), 0700) != 0) {
      return Error::FromErrno(errno, d);
    }
  }
  const std::string lock_path = dir + "/lock";
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock) return Error::FromErrno(errno, lock_path);
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Error(ErrorCode::kAlreadyExists,
                   "another corral serve is running with the runtime directory of " + dir);
    }
    return Error::FromErrno(errno, lock_path);
  }
  return SandboxRegistry(dir, std::move(lock));
}

std::string SandboxRegistry::PathOf(const std::string& sandbox_id) const {
  return dir_ + "/sandboxes/" + sandbox_id + ".json";
}

Status SandboxRegistry::Save(const RegistryEntry& entry) const {
  if (!SandboxIdProblem(entry.sandbox_id).empty()) {
    return Error(ErrorCode::kInvalidArgument, "bad sandbox id");
  }
  const std::string path = PathOf(entry.sandbox_id);
  const std::string temp = path + ".tmp";
  const std::string text = EntryToJson(entry).dump() + "\n";
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno(errno, temp);
  // No fsync, as the sandbox store's records (runtime/sandboxes/sandbox_store.cc): the
  // rename is atomic for any reader, a daemon killed mid-way loses nothing, and a host crash
  // ends the sandboxes an entry names anyway.
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    int err = errno;
    ::unlink(temp.c_str());
    return Error::FromErrno(err, temp);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return Error::FromErrno(err, path);
  }
  return Ok();
}

Status SandboxRegistry::Remove(const std::string& sandbox_id) const {
  if (!SandboxIdProblem(sandbox_id).empty()) return Ok();
  const std::string path = PathOf(sandbox_id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Error::FromErrno(errno, path);
  return Ok();
}

std::vector<RegistryEntry> SandboxRegistry::Load(std::vector<std::string>* problems) const {
  std::vector<RegistryEntry> out;
  const std::string dir = dir_ + "/sandboxes";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    problems->push_back(dir + ": " + std::string(strerror(errno)));
    return out;
  }
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    auto text = ReadFile(dir + "/" + name);
    if (!text) {
      problems->push_back(name + ": " + text.error().message());
      continue;
    }
    auto parsed = ParseJsonInput(*text);
    if (auto* error = std::get_if<JsonInputError>(&parsed)) {
      problems->push_back(name + ": " + error->message);
      continue;
    }
    auto entry = EntryFromJson(std::get<json>(parsed));
    if (!entry || entry->sandbox_id + ".json" != name) {
      problems->push_back(name + ": " +
                          (entry ? "file name and sandbox_id differ" : entry.error().message()));
      continue;
    }
    out.push_back(std::move(*entry));
  }
  ::closedir(d);
  return out;
}

}  // namespace corral::server
