#include "runtime/volumes/volume_attach.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "base/files.h"
#include "jail/image_mount.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/config.h"

namespace corral::runtime {

namespace {

constexpr const char* kUsersDir = "users";
constexpr const char* kAttachLock = "attach.lock";
constexpr const char* kUseLock = "use.lock";

Result<UniqueFd> OpenLock(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno(errno, path);
  return fd;
}

Status Flock(int fd, int how, const std::string& path) {
  while (::flock(fd, how) != 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "flock " + path);
  }
  return Ok();
}

// The mount of `volume` in a sandbox's recorded spec, if it has one.
const MountSpec* MountOf(const JailSpec& spec, const std::string& volume) {
  for (const MountSpec& m : spec.mounts) {
    if (m.volume == volume) return &m;
  }
  return nullptr;
}

// users/ entries whose sandbox is gone, or no longer mounts the volume (a name reused).
bool EntryIsLive(const std::string& sandbox, const std::string& volume, bool* read_write) {
  auto info = InspectSandbox(sandbox, Inspect::kLiveness);
  if (!info || !info->alive) return false;
  const MountSpec* m = MountOf(info->record.spec, volume);
  if (m == nullptr) return false;
  *read_write = !m->read_only;
  return true;
}

std::vector<std::string> EntriesOf(const std::string& users_dir) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(users_dir.c_str());
  if (dir == nullptr) return names;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// Only under the attach lock: an entry whose create is still under way has no record
// yet, and that create holds the lock.
void SweepStaleEntries(const VolumeStore& store, const std::string& name) {
  const std::string users_dir = store.DirOf(name) + "/" + kUsersDir;
  for (const std::string& sandbox : EntriesOf(users_dir)) {
    bool read_write = false;
    if (!EntryIsLive(sandbox, name, &read_write)) ::unlink((users_dir + "/" + sandbox).c_str());
  }
}

// flock(how | LOCK_NB), a few times over 40 ms: whoever only looks (VolumeUsers, from
// `volume ls` or another attach, takes the lock for an instant) is waited out; a run that
// holds it holds it for as long as it runs.
bool TryFlock(int fd, int how) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (::flock(fd, how | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    ::usleep(2000);
  }
  return false;
}

Error InUse(const std::string& name, bool read_write, const std::vector<VolumeUser>& users) {
  std::string who;
  for (const VolumeUser& u : users) who += (who.empty() ? "" : ", ") + u.what;
  return Error(ErrorCode::kFailedPrecondition,
               "volume " + name + " cannot be mounted " +
                   (read_write ? "read-write" : "read-only") + ": it is mounted by " + who +
                   " (a volume is shared read-only, or mounted read-write by one sandbox)");
}

}  // namespace

Result<UniqueFd> LockVolumeAttach(const VolumeStore& store, const std::string& name) {
  const std::string path = store.DirOf(name) + "/" + kAttachLock;
  ASSIGN_OR_RETURN(UniqueFd lock, OpenLock(path));
  RETURN_IF_ERROR(Flock(lock.get(), LOCK_EX, path));
  return lock;
}

std::vector<VolumeUser> VolumeUsers(const VolumeStore& store, const std::string& name) {
  std::vector<VolumeUser> users;
  const std::string dir = store.DirOf(name);
  for (const std::string& sandbox : EntriesOf(dir + "/" + kUsersDir)) {
    bool read_write = false;
    if (!EntryIsLive(sandbox, name, &read_write)) continue;
    users.push_back({sandbox, "sandbox " + sandbox + (read_write ? " (rw)" : " (ro)"), read_write});
  }
  // Runs: a lock nobody else holds can be taken exclusively.
  UniqueFd use(::open((dir + "/" + kUseLock).c_str(), O_RDWR | O_CLOEXEC));
  if (use && !TryFlock(use.get(), LOCK_EX)) {
    const bool shared = TryFlock(use.get(), LOCK_SH);
    users.push_back({"", shared ? "a corral run (ro)" : "a corral run (rw)", !shared});
  }
  if (auto record = store.Find(name); record && record->size_bytes) {
    bool any_writable = false;
    for (const std::string& device : jail::LoopDevicesOf(store.PathOf(*record), &any_writable)) {
      const bool rw = device.ends_with("(rw)");
      users.push_back({"", "the loop device " + device, rw});
    }
  }
  return users;
}

VolumeAttachment::~VolumeAttachment() = default;

void VolumeAttachment::Abandon() {
  for (const std::string& entry : user_entries_) ::unlink(entry.c_str());
  user_entries_.clear();
}

Result<VolumeAttachment> AttachVolumes(JailSpec* spec, const std::string& sandbox,
                                       bool create_missing) {
  VolumeAttachment attachment;
  std::map<std::string, MountSpec*> wanted;  // by name: locks taken in one order
  for (MountSpec& m : spec->mounts) {
    if (m.volume.empty()) continue;
    if (!wanted.emplace(m.volume, &m).second) {
      return Error(ErrorCode::kInvalidArgument, "volume " + m.volume + " is mounted twice (at " +
                                                    wanted[m.volume]->container_path + " and " +
                                                    m.container_path + "); mount it once");
    }
  }
  if (wanted.empty()) return attachment;
  // Before anything is made: a mount the run will refuse must not leave a new volume behind.
  RETURN_IF_ERROR(ValidateMountsSpec(spec->mounts));
  if (spec->mode == RunMode::kContainer) {
    return Error(ErrorCode::kUnsupported, "mode container: volume " + wanted.begin()->first +
                                              ": volumes are mounted in mode process only");
  }
  ASSIGN_OR_RETURN(VolumeStore store, VolumeStore::Open());
  for (auto& [name, mount] : wanted) {
    auto record = store.Find(name);
    if (!record && record.error().code() == ErrorCode::kNotFound && create_missing) {
      record = store.Create(name, std::nullopt);
      // Another create of the same name in between made it: use that one.
      if (!record && record.error().code() == ErrorCode::kAlreadyExists) record = store.Find(name);
    }
    if (!record) return record.error();
    const std::string dir = store.DirOf(name);
    ASSIGN_OR_RETURN(UniqueFd attach_lock, LockVolumeAttach(store, name));
    attachment.attach_locks_.push_back(std::move(attach_lock));
    SweepStaleEntries(store, name);
    const bool read_write = !mount->read_only;
    std::vector<VolumeUser> users = VolumeUsers(store, name);
    const bool conflict = read_write
                              ? !users.empty()
                              : std::any_of(users.begin(), users.end(),
                                            [](const VolumeUser& u) { return u.read_write; });
    if (conflict) {
      attachment.Abandon();
      return InUse(name, read_write, users);
    }
    if (sandbox.empty()) {
      ASSIGN_OR_RETURN(UniqueFd use_lock, OpenLock(dir + "/" + kUseLock));
      if (!TryFlock(use_lock.get(), read_write ? LOCK_EX : LOCK_SH)) {
        attachment.Abandon();
        return InUse(name, read_write, VolumeUsers(store, name));
      }
      attachment.use_locks_.push_back(std::move(use_lock));
    } else {
      const std::string users_dir = dir + "/" + kUsersDir;
      if (::mkdir(users_dir.c_str(), 0700) != 0 && errno != EEXIST) {
        attachment.Abandon();
        return Error::FromErrno(errno, "mkdir " + users_dir);
      }
      // Stale entries were swept above, under the lock: one still there is a live
      // sandbox's of this name, which the create would refuse anyway.
      const std::string entry = users_dir + "/" + sandbox;
      UniqueFd fd(::open(entry.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!fd) {
        const int err = errno;
        attachment.Abandon();
        if (err == EEXIST) {
          return Error(ErrorCode::kAlreadyExists, "a sandbox named " + sandbox + " exists");
        }
        return Error::FromErrno(err, entry);
      }
      const std::string mode = read_write ? "rw\n" : "ro\n";
      (void)!::write(fd.get(), mode.data(), mode.size());
      attachment.user_entries_.push_back(entry);
    }
    mount->host_path = store.PathOf(*record);
    mount->image = record->size_bytes.has_value();
    mount->disk_uid = record->uid;
    mount->disk_gid = record->gid;
  }
  return attachment;
}

Result<SandboxRecord> CreateSandboxWithVolumes(CreateRequest request, bool create_missing) {
  const bool any = std::any_of(request.spec.mounts.begin(), request.spec.mounts.end(),
                               [](const MountSpec& m) { return !m.volume.empty(); });
  if (!any) return CreateSandbox(request);
  if (request.name.empty()) request.name = NewSandboxId();
  ASSIGN_OR_RETURN(VolumeAttachment attachment,
                   AttachVolumes(&request.spec, request.name, create_missing));
  auto record = CreateSandbox(request);
  if (!record) attachment.Abandon();
  return record;
}

}  // namespace corral::runtime
