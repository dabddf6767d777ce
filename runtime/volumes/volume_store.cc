#include "runtime/volumes/volume_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/scope_guard.h"
#include "base/tree_at.h"
#include "runtime/run/identity.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/spec/config.h"

namespace corral::runtime {

namespace {

constexpr const char* kRecordFile = "volume.json";
constexpr const char* kDataDir = "data";
constexpr const char* kImageFile = "image.ext4";
constexpr const char* kRemovingPrefix = ".removing-";

Status MkdirPrivate(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return Ok();
  return Error::FromErrno(errno, "mkdir " + path);
}

// mkdir -p with 0755 parents (the state directory itself, /var/lib/corral).
Status MkdirParents(const std::string& path) {
  for (size_t i = path.find('/', 1); i != std::string::npos; i = path.find('/', i + 1)) {
    if (::mkdir(path.substr(0, i).c_str(), 0755) != 0 && errno != EEXIST) {
      return Error::FromErrno(errno, "mkdir " + path.substr(0, i));
    }
  }
  return Ok();
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string RecordToJson(const VolumeRecord& r) {
  nlohmann::json j = {{"version", r.version},
                      {"name", r.name},
                      {"created_at", r.created_at},
                      {"uid", r.uid},
                      {"gid", r.gid}};
  j["size_bytes"] = r.size_bytes ? nlohmann::json(*r.size_bytes) : nlohmann::json(nullptr);
  return j.dump(2) + "\n";
}

Result<VolumeRecord> RecordFromJson(const std::string& text, const std::string& origin) {
  try {
    const auto j = nlohmann::json::parse(text);
    VolumeRecord r;
    j.at("version").get_to(r.version);
    j.at("name").get_to(r.name);
    j.at("created_at").get_to(r.created_at);
    j.at("uid").get_to(r.uid);
    j.at("gid").get_to(r.gid);
    if (j.contains("size_bytes") && !j.at("size_bytes").is_null()) {
      r.size_bytes = j.at("size_bytes").get<int64_t>();
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kIo, origin + ": corrupt volume record: " + e.what());
  }
}

// Written whole or not at all, and on disk before the create says it is done: a volume is
// state that outlives a host crash (unlike a sandbox record on /run).
Status WriteDurably(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string tmp = dir + "/" + name + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno(errno, tmp);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd.get()) != 0) {
    return Error::FromErrno(errno, "write " + tmp);
  }
  if (::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) {
    return Error::FromErrno(errno, "rename " + tmp);
  }
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd) ::fsync(dir_fd.get());
  return Ok();
}

// The ids a new volume's files get (see volume_store.h).
Result<std::pair<uint32_t, uint32_t>> VolumeIds(const std::string& name) {
  if (::geteuid() != 0) return std::make_pair(::geteuid(), ::getegid());
  JailSpec spec;
  spec.identity_key = "volume:" + name;  // ':' is in no sandbox name and no path key
  ASSIGN_OR_RETURN(HostIdentity identity, ResolveIdentity(spec));
  return std::make_pair(static_cast<uint32_t>(identity.uid), static_cast<uint32_t>(identity.gid));
}

// mkfs.ext4 of `image`, its root directory owned by the volume's ids. Its output is kept
// for the error only.
Status MakeExt4(const std::string& image, uint32_t uid, uint32_t gid) {
  const std::string owner = "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid);
  const char* programs[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"};
  const char* program = nullptr;
  for (const char* p : programs) {
    if (::access(p, X_OK) == 0) {
      program = p;
      break;
    }
  }
  if (program == nullptr) {
    return Error(ErrorCode::kUnsupported,
                 "a volume with a size is an ext4 image, and mkfs.ext4 is not installed "
                 "(Debian: e2fsprogs)");
  }
  // -m 0: no blocks kept back for root (nobody is root in the volume); -E nodiscard: the
  // file is sparse already.
  std::vector<std::string> argv = {program, "-q", "-F", "-m", "0", "-E", owner + ",nodiscard",
                                   image};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe");
  const pid_t child = ::fork();
  if (child < 0) return Error::FromErrno(errno, "fork");
  if (child == 0) {  // a copy of a possibly multithreaded process (the daemon): syscalls only
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execv(program, args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);) {
    if (n > 0 && text.size() < 4096) text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Ok();
  return Error(ErrorCode::kIo, std::string(program) + " " + image + " failed: " + Trim(text));
}

// The whole tree at `path` (its last component never followed), through base/tree_at.h.
Status RemoveTree(const std::string& path) {
  const size_t slash = path.rfind('/');
  UniqueFd parent(::open(path.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return Error::FromErrno(errno, path.substr(0, slash));
  return RemoveAt(parent.get(), path.substr(slash + 1));
}

// Removals cut short (renamed aside, not yet gone) are finished by the next create or list.
void FinishRemovals(const std::string& root) {
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> leftovers;
  while (dirent* e = ::readdir(dir)) {
    if (std::string(e->d_name).rfind(kRemovingPrefix, 0) == 0) leftovers.push_back(e->d_name);
  }
  ::closedir(dir);
  for (const auto& name : leftovers) (void)RemoveTree(root + "/" + name);
}

}  // namespace

Result<std::string> VolumesDir() {
  ASSIGN_OR_RETURN(std::string state, StateDir());
  return state + "/volumes";
}

Result<VolumeStore> VolumeStore::Open() {
  ASSIGN_OR_RETURN(std::string root, VolumesDir());
  RETURN_IF_ERROR(MkdirParents(root));
  RETURN_IF_ERROR(MkdirPrivate(root));
  return VolumeStore(root);
}

std::string VolumeStore::PathOf(const VolumeRecord& record) const {
  return DirOf(record.name) + "/" + (record.size_bytes ? kImageFile : kDataDir);
}

Result<VolumeRecord> VolumeStore::Create(const std::string& name,
                                         std::optional<int64_t> size_bytes) {
  if (!IsValidVolumeName(name)) {
    return Error(ErrorCode::kInvalidArgument,
                 "volume name '" + name + "': " + std::string(kVolumeNameRule));
  }
  if (size_bytes && *size_bytes < kMinVolumeSize) {
    return Error(ErrorCode::kInvalidArgument,
                 "volume " + name +
                     ": --size must be at least 16MiB (room for ext4's own "
                     "structures), got " +
                     std::to_string(*size_bytes) + " bytes");
  }
  if (size_bytes && ::geteuid() != 0) {
    return Error(ErrorCode::kPermissionDenied,
                 "volume " + name +
                     ": a size needs root (the volume is an ext4 image, mounted "
                     "through a loop device); leave --size out for a directory volume");
  }
  FinishRemovals(root_);
  const std::string dir = DirOf(name);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    if (errno == EEXIST) {
      return Error(ErrorCode::kAlreadyExists, "volume " + name + " exists");
    }
    return Error::FromErrno(errno, "mkdir " + dir);
  }
  ScopeGuard undo([&] { (void)RemoveTree(dir); });
  VolumeRecord record;
  record.name = name;
  record.created_at = Now();
  record.size_bytes = size_bytes;
  ASSIGN_OR_RETURN(auto ids, VolumeIds(name));
  record.uid = ids.first;
  record.gid = ids.second;
  const std::string path = PathOf(record);
  if (size_bytes) {
    UniqueFd image(::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600));
    if (!image) return Error::FromErrno(errno, path);
    if (::ftruncate(image.get(), *size_bytes) != 0) return Error::FromErrno(errno, path);
    image.Reset();
    RETURN_IF_ERROR(MakeExt4(path, record.uid, record.gid));
  } else {
    if (::mkdir(path.c_str(), 0755) != 0) return Error::FromErrno(errno, "mkdir " + path);
    if (::chown(path.c_str(), record.uid, record.gid) != 0) {
      return Error::FromErrno(errno, "chown " + path);
    }
  }
  RETURN_IF_ERROR(WriteDurably(dir, kRecordFile, RecordToJson(record)));
  undo.Dismiss();
  return record;
}

Result<VolumeRecord> VolumeStore::Find(const std::string& name) const {
  if (!IsValidVolumeName(name)) {
    return Error(ErrorCode::kInvalidArgument,
                 "volume name '" + name + "': " + std::string(kVolumeNameRule));
  }
  const std::string path = DirOf(name) + "/" + kRecordFile;
  auto text = ReadFile(path);
  if (!text) {
    struct stat st;
    if (::stat(DirOf(name).c_str(), &st) != 0) {
      return Error(ErrorCode::kNotFound,
                   "no volume named " + name + " (corral volume create " + name + " makes one)");
    }
    return Error(ErrorCode::kIo, "volume " + name +
                                     " was not created whole (no record); corral volume rm " +
                                     name + " removes it");
  }
  ASSIGN_OR_RETURN(VolumeRecord record, RecordFromJson(*text, path));
  if (record.name != name) {
    return Error(ErrorCode::kIo, path + ": names volume '" + record.name + "'");
  }
  return record;
}

std::vector<VolumeRecord> VolumeStore::List(std::vector<UnreadableVolume>* unreadable) const {
  FinishRemovals(root_);
  std::vector<VolumeRecord> out;
  DIR* dir = ::opendir(root_.c_str());
  if (dir == nullptr) return out;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    auto record = Find(name);
    if (record) {
      out.push_back(std::move(*record));
    } else if (unreadable != nullptr) {
      unreadable->push_back({name, record.error().message()});
    }
  }
  return out;
}

VolumeUsage VolumeStore::Usage(const VolumeRecord& record) const {
  VolumeUsage usage;
  const std::string path = PathOf(record);
  if (record.size_bytes) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) usage.bytes = static_cast<int64_t>(st.st_blocks) * 512;
    return usage;
  }
  UniqueFd data(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!data) return usage;
  const TreeUsage tree = UsageAt(data.get());
  usage.bytes = tree.bytes;
  usage.files = tree.entries;
  return usage;
}

Status VolumeStore::RemoveDir(const std::string& name) {
  if (!IsValidVolumeName(name)) {
    return Error(ErrorCode::kInvalidArgument,
                 "volume name '" + name + "': " + std::string(kVolumeNameRule));
  }
  const std::string aside = root_ + "/" + kRemovingPrefix + name + "-" + std::to_string(::getpid());
  if (::rename(DirOf(name).c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return Error(ErrorCode::kNotFound, "no volume named " + name);
    return Error::FromErrno(errno, "rename " + DirOf(name));
  }
  return RemoveTree(aside);
}

}  // namespace corral::runtime
