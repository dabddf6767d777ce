#include "runtime/run/identity.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <string_view>
#include <vector>

#include "base/files.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/run/user_ns_plan.h"

namespace corral::runtime {

namespace {

// uid -1 is no one's: FindSubordinateRange then matches corral's line by name only.
constexpr uint32_t kNoId = static_cast<uint32_t>(-1);

std::vector<std::string_view> Lines(const std::string& text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.emplace_back(text.data() + start, end - start);
    start = end + 1;
  }
  return out;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t colon = line.find(':', start);
    out.push_back(line.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) return out;
    start = colon + 1;
  }
}

bool ParseU32(std::string_view text, uint32_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

bool Inside(uint64_t id, const jail::SubordinateRange& r) {
  return id >= r.start && id < uint64_t{r.start} + r.count;
}

std::string RangeText(const jail::SubordinateRange& r) {
  return std::to_string(r.start) + ":" + std::to_string(r.count);
}

std::string Refusal(const std::string& what) {
  return "the reserved id range (corral in /etc/subuid and /etc/subgid) holds " + what +
         "; sandboxes would share that id. Reserve a range no account uses: remove corral's "
         "lines and run corral setup ids --start N";
}

// An id database line "name:x:ID:..." whose field `index` lies in `range`.
Status CheckDatabase(const std::string& path, size_t index, const jail::SubordinateRange& range,
                     const char* kind, const char* id_label) {
  auto text = ReadFile(path);
  if (!text && text.error().sys_errno() == ENOENT) return Ok();  // lists no one
  if (!text) return text.error().WithContext("reading " + path);
  for (std::string_view line : Lines(*text)) {
    std::vector<std::string_view> f = Fields(line);
    uint32_t id = 0;
    if (f.size() <= index || !ParseU32(f[index], &id) || !Inside(id, range)) continue;
    return Error(ErrorCode::kInvalidArgument,
                 Refusal(std::string(kind) + " " + std::string(f[0]) + " (" + id_label + " " +
                         std::to_string(id) + " in " + path + ")"));
  }
  return Ok();
}

// Another line of a subid file whose range meets ours.
Status CheckOtherRanges(const std::string& path, const jail::SubordinateRange& range) {
  auto text = ReadFile(path);
  // A minimal system may have no subordinate id file yet (shadow's useradd makes it); the
  // reservation creates it.
  if (!text && text.error().sys_errno() == ENOENT) return Ok();
  if (!text) return text.error().WithContext("reading " + path);
  for (std::string_view line : Lines(*text)) {
    std::vector<std::string_view> f = Fields(line);
    jail::SubordinateRange other;
    if (f.size() != 3 || f[0] == kReservedRangeName || !ParseU32(f[1], &other.start) ||
        !ParseU32(f[2], &other.count) || other.count == 0) {
      continue;
    }
    uint64_t other_end = uint64_t{other.start} + other.count;
    uint64_t end = uint64_t{range.start} + range.count;
    if (other.start < end && range.start < other_end) {
      return Error(ErrorCode::kInvalidArgument,
                   Refusal(std::string(f[0]) + "'s subordinate range " + RangeText(other) +
                           " (in " + path + ")"));
    }
  }
  return Ok();
}

bool KernelHasUserNamespaces() {
  if (::access("/proc/self/ns/user", F_OK) != 0) return false;
  auto max = ReadFile("/proc/sys/user/max_user_namespaces");
  return !max || (!max->empty() && (*max)[0] != '0');
}

// An account from any NSS source (LDAP too, which /etc/passwd does not list) with this uid.
std::optional<std::string> AccountWithUid(uid_t uid) {
  passwd pw;
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || found == nullptr) return {};
  return std::string(pw.pw_name);
}

HostIdentity HostUid(const JailSpec& spec, std::string note) {
  HostIdentity id;
  id.mode = "host-uid";
  id.uid = spec.uid;
  id.gid = spec.gid;
  id.note = std::move(note);
  return id;
}

}  // namespace

std::optional<ReservedRange> FindReservedRange(const std::string& subuid_text,
                                               const std::string& subgid_text) {
  auto uids = jail::FindSubordinateRange(subuid_text, kReservedRangeName, kNoId);
  auto gids = jail::FindSubordinateRange(subgid_text, kReservedRangeName, kNoId);
  if (!uids || !gids) return std::nullopt;
  return ReservedRange{*uids, *gids};
}

Status CheckRangeFree(const ReservedRange& range, const IdFiles& files) {
  RETURN_IF_ERROR(CheckDatabase(files.passwd, 2, range.uids, "account", "id"));
  RETURN_IF_ERROR(
      CheckDatabase(files.passwd, 3, range.gids, "the primary group of account", "group id"));
  RETURN_IF_ERROR(CheckDatabase(files.group, 2, range.gids, "group", "group id"));
  RETURN_IF_ERROR(CheckOtherRanges(files.subuid, range.uids));
  return CheckOtherRanges(files.subgid, range.gids);
}

uint32_t SlotFor(const std::string& key, uint32_t count) {
  if (key.empty() || count < 2) return 0;
  return 1 + static_cast<uint32_t>(Fnv1a(key) % (count - 1));
}

std::string IdentityKeyOf(const JailSpec& spec) {
  if (!spec.identity_claimed_key.empty()) return spec.identity_claimed_key;
  if (!spec.user_data_dir) return spec.identity_key;
  std::string dir = std::filesystem::path(*spec.user_data_dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

Result<HostIdentity> ResolveIdentity(const JailSpec& spec, const IdFiles& files) {
  if (RunsRootless(spec)) {
    HostIdentity id;
    id.mode = "rootless";
    const bool root = ::geteuid() == 0;
    id.uid = root ? spec.uid : ::geteuid();
    id.gid = root ? spec.gid : ::getegid();
    return id;
  }
  if (spec.identity == IdentityMode::kHostUid) return HostUid(spec, "");
  const bool required = spec.identity == IdentityMode::kReserved;
  auto unavailable = [&](const std::string& why) -> Result<HostIdentity> {
    if (required) {
      return Error(ErrorCode::kUnsupported, "identity: reserved: " + why);
    }
    return HostUid(spec, why);
  };
  if (spec.uid == 0 || spec.gid == 0) {
    // The jail's 0 is host root's for its setup; a command that is root too stays so.
    return unavailable("the command runs as uid/gid 0 (unsafe.allow_root), which stays host root");
  }
  auto subuid = ReadFile(files.subuid);
  auto subgid = ReadFile(files.subgid);
  auto range = FindReservedRange(subuid ? *subuid : "", subgid ? *subgid : "");
  if (!range) {
    return unavailable("no range reserved (no corral line in both " + files.subuid + " and " +
                       files.subgid + "); run: corral setup ids");
  }
  if (!KernelHasUserNamespaces()) {
    return unavailable("the kernel has no user namespaces (user.max_user_namespaces is 0)");
  }
  RETURN_IF_ERROR(CheckRangeFree(*range, files));
  HostIdentity id;
  id.mode = "reserved";
  id.slot = SlotFor(IdentityKeyOf(spec), std::min(range->uids.count, range->gids.count));
  id.uid = range->uids.start + id.slot;
  id.gid = range->gids.start + id.slot;
  if (auto account = AccountWithUid(id.uid)) {
    return Error(ErrorCode::kInvalidArgument,
                 Refusal("account " + *account + " (uid " + std::to_string(id.uid) +
                         ", from the name service)"));
  }
  return id;
}

Status PinIdentity(const std::string& sandbox_name, JailSpec* spec) {
  spec->identity_key = sandbox_name;
  ASSIGN_OR_RETURN(const HostIdentity id, ResolveIdentity(*spec));
  // Pinned to what it resolved to; a rootless jail has no host identity to pin.
  if (id.mode == "reserved") spec->identity = IdentityMode::kReserved;
  if (id.mode == "host-uid") spec->identity = IdentityMode::kHostUid;
  return Ok();
}

std::optional<IdentityOutcome> IdentityOutcomeFor(const JailSpec& spec) {
  auto id = ResolveIdentity(spec);
  if (!id) return std::nullopt;
  return IdentityOutcome{id->mode, spec.uid, spec.gid, id->uid, id->gid, id->note};
}

jail::UserNamespacePlan ReservedUserNamespace(const JailSpec& spec, const HostIdentity& id) {
  jail::UserNamespacePlan ns;
  ns.enabled = true;
  ns.uid_map = {{0, 0, 1}, {spec.uid, id.uid, 1}};
  ns.gid_map = {{0, 0, 1}, {spec.gid, id.gid, 1}};
  // Root writes the maps, so setgroups stays allowed and the command drops its groups.
  ns.deny_setgroups = false;
  ns.init_uid = 0;
  ns.init_gid = 0;
  return ns;
}

namespace {

// A new file (or an old one truncated) with `content`, mode 0644 (base's WriteFile only
// writes files that exist, for procfs and cgroupfs).
Status CreateFile(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Error::FromErrno(errno, "create " + path);
  ssize_t n = ::write(fd, content.data(), content.size());
  int err = errno;
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (n != static_cast<ssize_t>(content.size()) || !synced) {
    return Error::FromErrno(n < 0 || !synced ? err : EIO, "write " + path);
  }
  return Ok();
}

// shadow's protocol (lib/commonio.c): a file FILE.PID holding our pid, hard-linked to
// FILE.lock; a lock whose pid is gone is stale and removed once.
class ShadowLock {
 public:
  static Result<ShadowLock> Take(const std::string& file) {
    ShadowLock lock;
    lock.path_ = file + ".lock";
    std::string mine = file + "." + std::to_string(::getpid());
    RETURN_IF_ERROR(CreateFile(mine, std::to_string(::getpid())));
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (::link(mine.c_str(), lock.path_.c_str()) == 0) {
        ::unlink(mine.c_str());
        lock.held_ = true;
        return lock;
      }
      int err = errno;
      auto holder = ReadFile(lock.path_);
      uint32_t pid = 0;
      if (err == EEXIST && holder && ParseU32(*holder, &pid) && pid > 0 &&
          ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH && attempt == 0) {
        ::unlink(lock.path_.c_str());  // stale: its holder is gone
        continue;
      }
      ::unlink(mine.c_str());
      return Error::FromErrno(err, lock.path_ + " (another tool, e.g. usermod, holds it; retry)");
    }
    ::unlink(mine.c_str());
    return Error(ErrorCode::kIo, lock.path_ + " is held; retry");
  }
  ShadowLock() = default;
  ShadowLock(ShadowLock&& o) noexcept : path_(std::move(o.path_)), held_(o.held_) {
    o.held_ = false;
  }
  ShadowLock& operator=(ShadowLock&& o) noexcept {
    std::swap(path_, o.path_);
    std::swap(held_, o.held_);
    return *this;
  }
  ~ShadowLock() {
    if (held_) ::unlink(path_.c_str());
  }

 private:
  std::string path_;
  bool held_ = false;
};

// FILE becomes `text`, by writing FILE+ and renaming it over FILE (mode 0644, as shadow
// keeps these files), so a reader sees the old file or the new one, never half of one.
Status ReplaceByRename(const std::string& path, const std::string& text) {
  std::string temp = path + "+";
  RETURN_IF_ERROR(CreateFile(temp, text));
  if (::chmod(temp.c_str(), 0644) != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return Error::FromErrno(err, "replacing " + path);
  }
  return Ok();
}

Status AppendByRename(const std::string& path, const std::string& line) {
  auto old = ReadFile(path);
  std::string text = old ? *old : "";
  if (!text.empty() && text.back() != '\n') text += '\n';
  return ReplaceByRename(path, text + line + "\n");
}

// FILE without its corral lines; false when it had none (and is left alone).
Result<bool> DropCorralLines(const std::string& path) {
  auto old = ReadFile(path);
  if (!old) return false;  // no file: nothing reserved in it
  std::string kept;
  bool dropped = false;
  for (std::string_view line : Lines(*old)) {
    if (Fields(line)[0] == kReservedRangeName) {
      dropped = true;
      continue;
    }
    kept.append(line).push_back('\n');
  }
  if (!dropped) return false;
  RETURN_IF_ERROR(ReplaceByRename(path, kept));
  return true;
}

}  // namespace

Result<std::string> ReleaseRange(const IdFiles& files) {
  ASSIGN_OR_RETURN(ShadowLock uid_lock, ShadowLock::Take(files.subuid));
  ASSIGN_OR_RETURN(ShadowLock gid_lock, ShadowLock::Take(files.subgid));
  ASSIGN_OR_RETURN(const bool from_uids, DropCorralLines(files.subuid));
  ASSIGN_OR_RETURN(const bool from_gids, DropCorralLines(files.subgid));
  if (!from_uids && !from_gids) return std::string("no id range was reserved for corral");
  return "removed corral's id range from " +
         (from_uids && from_gids ? files.subuid + " and " + files.subgid
                                 : (from_uids ? files.subuid : files.subgid)) +
         "; files sandboxes wrote keep their owners, and root-mode jails now run as host "
         "uid 1000 (identity: auto)";
}

Result<std::string> ReserveRange(std::optional<uint32_t> start, std::optional<uint32_t> count,
                                 const IdFiles& files) {
  ASSIGN_OR_RETURN(ShadowLock uid_lock, ShadowLock::Take(files.subuid));
  ASSIGN_OR_RETURN(ShadowLock gid_lock, ShadowLock::Take(files.subgid));
  auto subuid = ReadFile(files.subuid);
  auto subgid = ReadFile(files.subgid);
  auto uids = jail::FindSubordinateRange(subuid ? *subuid : "", kReservedRangeName, kNoId);
  auto gids = jail::FindSubordinateRange(subgid ? *subgid : "", kReservedRangeName, kNoId);
  // An existing line wins: moving the range would leave every thread's files behind.
  const jail::SubordinateRange* existing = uids ? &*uids : gids ? &*gids : nullptr;
  jail::SubordinateRange want{start.value_or(existing ? existing->start : kDefaultReservedStart),
                              count.value_or(existing ? existing->count : kDefaultReservedCount)};
  if (want.count < 2 || uint64_t{want.start} + want.count > kNoId) {
    return Error(
        ErrorCode::kInvalidArgument,
        "setup ids: a range of at least 2 ids below 4294967295 is needed, got " + RangeText(want));
  }
  for (const auto& [found, file] :
       {std::pair{&uids, &files.subuid}, std::pair{&gids, &files.subgid}}) {
    if (*found && ((*found)->start != want.start || (*found)->count != want.count)) {
      return Error(ErrorCode::kInvalidArgument,
                   *file + " already reserves corral:" + RangeText(**found) +
                       "; corral keeps it (moving it would leave sandboxes' files behind). "
                       "Remove that line first to choose another");
    }
  }
  ReservedRange range{want, want};
  RETURN_IF_ERROR(CheckRangeFree(range, files));
  const std::string line = std::string(kReservedRangeName) + ":" + RangeText(want);
  if (uids && gids) {
    return "corral's id range " + RangeText(want) + " is already reserved in " + files.subuid +
           " and " + files.subgid + " (no account or group has an id in it)";
  }
  if (!uids) RETURN_IF_ERROR(AppendByRename(files.subuid, line));
  if (!gids) RETURN_IF_ERROR(AppendByRename(files.subgid, line));
  return "reserved ids " + RangeText(want) + " for corral's sandboxes: added " + line + " to " +
         (!uids && !gids ? files.subuid + " and " + files.subgid
                         : (!uids ? files.subuid : files.subgid));
}

}  // namespace corral::runtime
