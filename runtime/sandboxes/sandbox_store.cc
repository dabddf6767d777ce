#include "runtime/sandboxes/sandbox_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/json_input.h"
#include "runtime/run/landlock_plan.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/record_json.h"
#include "runtime/spec/spec_json.h"

namespace corral::runtime {

namespace {

Status MkdirPrivate(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return Ok();
  return Error::FromErrno(errno, "mkdir " + path);
}

}  // namespace

std::string RecordToJson(const SandboxRecord& r) {
  nlohmann::json j = {{"version", r.version},
                      {"id", r.id},
                      {"name", r.name},
                      {"init_pid", r.init_pid},
                      {"init_start_ticks", r.init_start_ticks},
                      {"cgroup_name", r.cgroup_name},
                      {"ns_flags", r.ns_flags},
                      {"created_at", r.created_at},
                      {"idle_timeout_seconds", r.idle_timeout_seconds},
                      {"spec", nlohmann::json::parse(SpecToJson(r.spec))},
                      {"landlock", LandlockPlanToJson(r.landlock)}};
  return j.dump(2);
}

Result<SandboxRecord> RecordFromJson(const std::string& text, const std::string& origin) {
  auto parsed = ParseJsonInputOrError(text);
  if (!parsed)
    return Error(ErrorCode::kIo, origin + ": corrupt state: " + parsed.error().message());
  try {
    const nlohmann::json& j = *parsed;
    SandboxRecord r;
    j.at("version").get_to(r.version);
    if (r.version != 1) {
      return Error(ErrorCode::kUnsupported, origin + ": state format version " +
                                                std::to_string(r.version) +
                                                " is newer than this corral understands");
    }
    j.at("id").get_to(r.id);
    j.at("name").get_to(r.name);
    j.at("init_pid").get_to(r.init_pid);
    j.at("init_start_ticks").get_to(r.init_start_ticks);
    j.at("cgroup_name").get_to(r.cgroup_name);
    j.at("ns_flags").get_to(r.ns_flags);
    j.at("created_at").get_to(r.created_at);
    j.at("idle_timeout_seconds").get_to(r.idle_timeout_seconds);
    ASSIGN_OR_RETURN(r.spec, SpecFromJson(j.at("spec").dump()));
    if (j.contains("landlock")) {
      r.landlock = LandlockPlanFromJson(j.at("landlock"));
    } else {
      r.landlock.reason = "the sandbox was created by a corral without Landlock";
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kIo, origin + ": corrupt state: " + e.what());
  }
}

bool IsValidSandboxName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<SandboxStore> SandboxStore::Open() {
  const char* env = std::getenv("CORRAL_RUNTIME_DIR");
  if (env != nullptr && *env != '\0' && *env != '/') {
    return Error(ErrorCode::kInvalidArgument,
                 "CORRAL_RUNTIME_DIR must be absolute: " + std::string(env));
  }
  // /run/corral for root; a non-root caller's own (rootless mode), or why it has none.
  ASSIGN_OR_RETURN(std::string root, UsableRuntimeDir());
  RETURN_IF_ERROR(MkdirPrivate(root));
  RETURN_IF_ERROR(MkdirPrivate(root + "/sandboxes"));
  return SandboxStore(root);
}

std::string SandboxStore::DirOf(const std::string& name) const {
  return root_ + "/sandboxes/" + name;
}

std::string SandboxStore::IdPath(const std::string& id) const { return root_ + "/ids/" + id; }

std::string SandboxStore::IdlePath(const std::string& name) const {
  return root_ + "/idle/" + name;
}

Status SandboxStore::Save(const SandboxRecord& record) {
  std::string dir = DirOf(record.name);
  std::string tmp = dir + "/state.json.tmp";
  UniqueFd fd(::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno(errno, tmp);
  std::string text = RecordToJson(record);
  // No fsync: the rename makes the new record appear whole or not at all to any reader,
  // also after corral (or the daemon) is killed; only a host crash could lose it, and a
  // host crash ends every sandbox the record describes (their inits die with the host, and
  // the store normally lives on a tmpfs, /run). An fsync cost ~39 ms per create on ext4.
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return Error::FromErrno(errno, "write " + tmp);
  }
  if (::rename(tmp.c_str(), (dir + "/state.json").c_str()) != 0) {
    return Error::FromErrno(errno, "rename " + tmp);
  }
  // Indexes, so that finding by id and the idle sweep never read every record.
  RETURN_IF_ERROR(MkdirPrivate(root_ + "/ids"));
  if (::symlink(record.name.c_str(), IdPath(record.id).c_str()) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "symlink " + IdPath(record.id));
  }
  if (record.idle_timeout_seconds > 0) {
    RETURN_IF_ERROR(MkdirPrivate(root_ + "/idle"));
    // Written before it can matter: the sweep skips a sandbox whose entry reads as 0.
    UniqueFd idle(
        ::open(IdlePath(record.name).c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600));
    std::string text = std::to_string(record.idle_timeout_seconds) + "\n";
    if (!idle ||
        ::write(idle.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return Error::FromErrno(errno, "write " + IdlePath(record.name));
    }
  }
  return Ok();
}

Result<SandboxRecord> SandboxStore::Find(const std::string& name_or_id) const {
  if (!IsValidSandboxName(name_or_id)) {
    return Error(ErrorCode::kInvalidArgument,
                 "sandbox '" + name_or_id + "': names and ids match [A-Za-z0-9_-]{1,64}");
  }
  std::string path = DirOf(name_or_id) + "/state.json";
  if (auto text = ReadFile(path)) return RecordFromJson(*text, path);
  char target[128];
  ssize_t n = ::readlink(IdPath(name_or_id).c_str(), target, sizeof target - 1);
  if (n > 0) {
    std::string name(target, static_cast<size_t>(n));
    std::string by_id = DirOf(name) + "/state.json";
    if (!IsValidSandboxName(name)) {
      return Error(ErrorCode::kIo, IdPath(name_or_id) + ": corrupt index entry");
    }
    if (auto text = ReadFile(by_id)) return RecordFromJson(*text, by_id);
  }
  return Error(ErrorCode::kNotFound, "no sandbox named '" + name_or_id + "'", ENOENT);
}

std::vector<SandboxRecord> SandboxStore::List(std::vector<UnreadableRecord>* unreadable) const {
  std::vector<SandboxRecord> out;
  const std::string sandboxes = root_ + "/sandboxes";
  DIR* dir = ::opendir(sandboxes.c_str());
  if (dir == nullptr) {
    if (errno != ENOENT && unreadable != nullptr) {
      unreadable->push_back({"", sandboxes, std::strerror(errno)});
    }
    return out;
  }
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (!IsValidSandboxName(name)) continue;
    std::string path = DirOf(name) + "/state.json";
    auto text = ReadFile(path);
    if (!text) {
      // No record yet (being created) or any more (being removed): not a problem.
      if (text.error().sys_errno() != ENOENT && unreadable != nullptr) {
        unreadable->push_back({name, path, text.error().message()});
      }
      continue;
    }
    auto record = RecordFromJson(*text, path);
    if (record) {
      out.push_back(std::move(*record));
    } else if (unreadable != nullptr) {
      unreadable->push_back({name, path, record.error().message()});
    }
  }
  ::closedir(dir);
  return out;
}

std::vector<IdleEntry> SandboxStore::IdleCandidates() const {
  std::vector<IdleEntry> out;
  DIR* dir = ::opendir((root_ + "/idle").c_str());
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (!IsValidSandboxName(name)) continue;
    auto text = ReadFile(IdlePath(name));
    if (!text) continue;
    double timeout = std::strtod(text->c_str(), nullptr);
    if (timeout > 0) out.push_back({name, timeout});
  }
  ::closedir(dir);
  return out;
}

Status SandboxStore::Forget(const std::string& name) {
  std::string dir = DirOf(name);
  auto text = ReadFile(dir + "/state.json");
  auto record = text ? RecordFromJson(*text, dir) : Result<SandboxRecord>(text.error());
  if (record) {
    if (::unlink(IdPath(record->id).c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "unlink " + IdPath(record->id));
    }
  } else if (text || text.error().sys_errno() != ENOENT) {
    RETURN_IF_ERROR(UnlinkIdsNaming(name));  // the record is unreadable: its id is unknown
  }
  return RemoveDir(name);
}

Status SandboxStore::UnlinkIdsNaming(const std::string& name) const {
  DIR* ids = ::opendir((root_ + "/ids").c_str());
  if (ids == nullptr) return errno == ENOENT ? Ok() : Error::FromErrno(errno, root_ + "/ids");
  std::vector<std::string> naming;
  while (dirent* e = ::readdir(ids)) {
    char target[128];
    ssize_t n = ::readlinkat(::dirfd(ids), e->d_name, target, sizeof target - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == name) naming.push_back(e->d_name);
  }
  ::closedir(ids);
  for (const std::string& id : naming) {
    if (::unlink(IdPath(id).c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "unlink " + IdPath(id));
    }
  }
  return Ok();
}

Status SandboxStore::RemoveDir(const std::string& name) {
  std::string dir = DirOf(name);
  if (::unlink(ClaimIndexPath(name).c_str()) != 0 && errno != ENOENT) {
    return Error::FromErrno(errno, "unlink " + ClaimIndexPath(name));
  }
  if (::unlink(IdlePath(name).c_str()) != 0 && errno != ENOENT) {
    return Error::FromErrno(errno, "unlink " + IdlePath(name));
  }
  for (const char* f :
       {"/state.json", "/state.json.tmp", "/pending.json", "/pending.json.tmp", "/creating",
        "/lock", "/last_used", "/oom_kills", "/paused", "/pause.lock"}) {
    if (::unlink((dir + f).c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "unlink " + dir + f);
    }
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return Error::FromErrno(errno, "rmdir " + dir);
  return Ok();
}

Status SandboxStore::Rename(const std::string& from, const SandboxRecord& to) {
  ASSIGN_OR_RETURN(SandboxRecord old, Find(from));
  if (old.name != from) {
    return Error(ErrorCode::kInvalidArgument, "rename: '" + from + "' is an id, not a name");
  }
  if (old.id != to.id) {
    return Error(ErrorCode::kInvalidArgument,
                 "rename " + from + " -> " + to.name + ": the record's id changed");
  }
  // kAlreadyExists when the name is taken: nothing changed. Nothing is noted in the
  // claim: were we to die before the switch, `from` is whole and owns everything.
  ASSIGN_OR_RETURN(UniqueFd claim, Claim(to.name));
  // Every step before the switch of the id index can be undone: `from` stays whole.
  auto undo = [&](Error e) {
    (void)RemoveDir(to.name);
    return e;
  };
  if (Status st = Save(to); !st) return undo(st.error());  // its id link still names `from`
  EndClaim(to.name);
  const std::string tmp = IdPath(to.id) + ".tmp";
  (void)::unlink(tmp.c_str());
  if (::symlink(to.name.c_str(), tmp.c_str()) != 0) {
    return undo(Error::FromErrno(errno, "symlink " + tmp));
  }
  if (::rename(tmp.c_str(), IdPath(to.id).c_str()) != 0) {
    Error e = Error::FromErrno(errno, "rename " + tmp);
    (void)::unlink(tmp.c_str());
    return undo(e);
  }
  // The id now finds `to`; `from` is only a name nobody asks for any more.
  if (Status st = RemoveDir(from); !st) {
    return Error(st.error().code(), "sandbox renamed to " + to.name + ", but the old entry " +
                                        from + " is left: " + st.error().message());
  }
  return Ok();
}

Result<UniqueFd> SandboxStore::Lock(const std::string& name, bool shared, bool wait) const {
  UniqueFd fd(::open((DirOf(name) + "/lock").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, "lock of sandbox " + name);
  if (::flock(fd.get(), (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB)) != 0) {
    return Error::FromErrno(errno, "flock sandbox " + name);
  }
  return fd;
}

Status SandboxStore::TouchLastUsed(const std::string& name) const {
  std::string path = DirOf(name) + "/last_used";
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  if (!fd || ::futimens(fd.get(), nullptr) != 0) return Error::FromErrno(errno, path);
  return Ok();
}

double SandboxStore::LastUsed(const std::string& name) const {
  struct stat st;
  if (::stat((DirOf(name) + "/last_used").c_str(), &st) != 0) return 0;
  return static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
}

std::optional<double> SandboxStore::PausedSince(const std::string& name) const {
  struct stat st;
  if (::stat((DirOf(name) + "/paused").c_str(), &st) != 0) return std::nullopt;
  return static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
}

Status SandboxStore::SetPaused(const std::string& name, bool paused) const {
  const std::string path = DirOf(name) + "/paused";
  if (!paused) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Error::FromErrno(errno, path);
    return Ok();
  }
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  if (!fd || ::futimens(fd.get(), nullptr) != 0) return Error::FromErrno(errno, path);
  return Ok();
}

Result<UniqueFd> SandboxStore::LockPause(const std::string& name) const {
  const std::string path = DirOf(name) + "/pause.lock";
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_RDONLY | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno(errno, "pause lock of sandbox " + name);
  if (::flock(fd.get(), LOCK_EX) != 0) return Error::FromErrno(errno, "flock " + path);
  return fd;
}

Status SandboxStore::AddRemovedOomKills(const std::string& name, int64_t kills) const {
  std::string path = DirOf(name) + "/oom_kills";
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno(errno, path);
  std::string line = std::to_string(kills) + "\n";
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return Error::FromErrno(errno, "write " + path);
  }
  return Ok();
}

int64_t SandboxStore::RemovedOomKills(const std::string& name) const {
  auto text = ReadFile(DirOf(name) + "/oom_kills");
  if (!text) return 0;
  int64_t total = 0;
  const char* p = text->c_str();
  while (*p != '\0') {
    char* end = nullptr;
    long long n = std::strtoll(p, &end, 10);
    if (end == p) break;
    if (n > 0) total += n;
    p = end;
  }
  return total;
}

namespace {

struct ProcStat {
  char state = '?';          // field 3
  uint64_t flags = 0;        // field 9
  uint64_t start_ticks = 0;  // field 22
};

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  auto text = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  // comm (field 2) may contain spaces and parentheses: count fields after the last ')'.
  size_t close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) return std::nullopt;
  ProcStat st;
  size_t pos = close + 2;  // field 3 starts here
  st.state = (*text)[pos];
  for (int field = 3; field < 22; ++field) {
    pos = text->find(' ', pos);
    if (pos == std::string::npos) return std::nullopt;
    ++pos;
    if (field + 1 == 9) st.flags = std::strtoull(text->c_str() + pos, nullptr, 10);
  }
  st.start_ticks = std::strtoull(text->c_str() + pos, nullptr, 10);
  return st;
}

constexpr uint64_t kPfExiting = 0x00000004;  // PF_EXITING, include/linux/sched.h

}  // namespace

std::optional<uint64_t> ProcessStartTicks(pid_t pid) {
  auto st = ReadProcStat(pid);
  if (!st) return std::nullopt;
  return st->start_ticks;
}

bool ProcessRunning(pid_t pid, uint64_t start_ticks) {
  auto st = ReadProcStat(pid);
  return st && st->start_ticks == start_ticks && st->state != 'Z' && st->state != 'X' &&
         st->state != 'x' && (st->flags & kPfExiting) == 0;
}

}  // namespace corral::runtime
