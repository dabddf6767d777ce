// Claims on sandbox names (sandbox_store.h, "claims"): how a create that dies half-way is
// told apart from one under way, and handed to whoever undoes it.
//
// <root>/sandboxes/<name>/creating is the claim: flock'ed LOCK_EX by the maker from the
// moment the directory appears until the record is saved. Beside it, pending.json holds
// the maker's notes (the record in progress), replaced whole at each step. The kernel drops the
// flock when the maker dies, so "creating exists, its lock is free, no state.json" means a dead
// maker, with no pid that could be reused. The directory is made as .claim-<random> with the lock
// already held and renamed into place, so no one can see the name claimed before it is locked.
//
// <root>/claims/<name> is the index of claims: made before the rename, removed when the claim
// ends. The sweep of dead makers' claims (every create and exec runs it) reads this directory,
// which holds only the creates under way, never the directory of every sandbox: with 10,000
// sandboxes a scan of theirs cost each create and exec 10,000 stats. A claim of a corral from
// before the index is undone by `corral rm NAME`.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "base/files.h"
#include "base/scope_guard.h"
#include "runtime/sandboxes/record_json.h"
#include "runtime/sandboxes/sandbox_store.h"

namespace corral::runtime {
namespace {

constexpr const char* kTempPrefix = ".claim-";
// A temporary claim directory is locked within microseconds of its mkdir; one whose lock
// is free and that is older than this was left by a maker that died in between.
constexpr time_t kTempGraceSeconds = 10;
// A claimed name without a claim file or a record is a directory being removed right now,
// or one left by a corral from before claims had locks; after this long, the latter.
constexpr time_t kBareGraceSeconds = 60;

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string RandomSuffix() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    return std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
  }
  char hex[17];
  for (size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return hex;
}

bool OlderThan(const std::string& path, time_t seconds) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime > seconds;
}

// Removes a temporary claim directory of a maker that died before renaming it.
void RemoveDeadTemp(const std::string& dir) {
  UniqueFd creating(::open((dir + "/creating").c_str(), O_RDWR | O_CLOEXEC));
  if (creating && ::flock(creating.get(), LOCK_EX | LOCK_NB) != 0) return;  // alive
  if (!OlderThan(dir, kTempGraceSeconds)) return;
  for (const char* f : {"/creating", "/lock", "/last_used"}) (void)::unlink((dir + f).c_str());
  (void)::rmdir(dir.c_str());
}

}  // namespace

Result<UniqueFd> SandboxStore::Claim(const std::string& name) {
  if (!IsValidSandboxName(name)) {
    return Error(ErrorCode::kInvalidArgument,
                 "sandbox name '" + name + "': must match [A-Za-z0-9_-]{1,64}");
  }
  auto taken = [&] {
    return Error(ErrorCode::kAlreadyExists, "a sandbox named '" + name + "' already exists",
                 EEXIST);
  };
  if (PathExists(DirOf(name))) return taken();
  const std::string tmp = root_ + "/sandboxes/" + kTempPrefix + RandomSuffix();
  if (::mkdir(tmp.c_str(), 0700) != 0) return Error::FromErrno(errno, "mkdir " + tmp);
  ScopeGuard remove_tmp([&] {
    for (const char* f : {"/creating", "/lock", "/last_used"}) (void)::unlink((tmp + f).c_str());
    (void)::rmdir(tmp.c_str());
  });
  UniqueFd lock(::open((tmp + "/lock").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  if (!lock) return Error::FromErrno(errno, "create lock of sandbox " + name);
  UniqueFd creating(::open((tmp + "/creating").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  if (!creating || ::flock(creating.get(), LOCK_EX | LOCK_NB) != 0) {
    return Error::FromErrno(errno, "claim of sandbox " + name);
  }
  UniqueFd last_used(::open((tmp + "/last_used").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  if (!last_used) return Error::FromErrno(errno, tmp + "/last_used");
  // Indexed before the name is claimed, so that a maker dying right after the rename is found.
  // A maker that loses the race leaves the entry: the winner's end of claim, or the sweep
  // once the name has a record or no directory, removes it.
  if (::mkdir((root_ + "/claims").c_str(), 0700) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "mkdir " + root_ + "/claims");
  }
  UniqueFd entry(::open(ClaimIndexPath(name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  if (!entry) return Error::FromErrno(errno, "create " + ClaimIndexPath(name));
  // Not empty, so the rename cannot replace a directory of the same name: it fails.
  if (::rename(tmp.c_str(), DirOf(name).c_str()) != 0) {
    if (errno == EEXIST || errno == ENOTEMPTY) return taken();
    return Error::FromErrno(errno, "rename " + tmp + " to " + DirOf(name));
  }
  remove_tmp.Dismiss();
  return creating;
}

Status SandboxStore::NotePending(int claim_fd, const SandboxRecord& pending) const {
  (void)claim_fd;  // the claim is held: only its maker writes here
  // Whole or not at all, as the record itself: a maker killed while writing leaves the
  // previous note (a note cut short would hide what it had made).
  const std::string dir = DirOf(pending.name);
  const std::string tmp = dir + "/pending.json.tmp";
  UniqueFd fd(::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600));
  const std::string text = RecordToJson(pending);
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::rename(tmp.c_str(), (dir + "/pending.json").c_str()) != 0) {
    return Error::FromErrno(errno, "note of the claim of sandbox " + pending.name);
  }
  return Ok();
}

void SandboxStore::EndClaim(const std::string& name) const {
  (void)::unlink((DirOf(name) + "/pending.json").c_str());
  (void)::unlink((DirOf(name) + "/creating").c_str());
  (void)::unlink(ClaimIndexPath(name).c_str());
}

std::string SandboxStore::ClaimIndexPath(const std::string& name) const {
  return root_ + "/claims/" + name;
}

Result<std::optional<SandboxStore::StaleClaim>> SandboxStore::TakeStaleClaim(
    const std::string& name) const {
  if (!IsValidSandboxName(name)) return std::optional<StaleClaim>();
  const std::string dir = DirOf(name);
  auto has_record = [&] { return PathExists(dir + "/state.json"); };
  if (!PathExists(dir) || has_record()) return std::optional<StaleClaim>();
  StaleClaim stale;
  stale.lock = UniqueFd(::open((dir + "/creating").c_str(), O_RDWR | O_CLOEXEC));
  if (!stale.lock) {
    if (errno != ENOENT) return Error::FromErrno(errno, dir + "/creating");
    // No claim file: being removed right now, or left by an older corral.
    if (!OlderThan(dir, kBareGraceSeconds) || has_record()) return std::optional<StaleClaim>();
    return std::optional<StaleClaim>(std::move(stale));
  }
  if (::flock(stale.lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::optional<StaleClaim>();  // its maker is at work
    return Error::FromErrno(errno, "flock " + dir + "/creating");
  }
  // The maker may have saved its record and let go between our looks.
  if (has_record()) return std::optional<StaleClaim>();
  if (auto text = ReadFile(dir + "/pending.json")) {
    if (auto pending = RecordFromJson(*text, dir + "/pending.json")) {
      stale.pending = std::move(*pending);
    }
  }
  return std::optional<StaleClaim>(std::move(stale));
}

std::vector<std::string> SandboxStore::ClaimsWithoutRecord() const {
  std::vector<std::string> out;
  const std::string index = root_ + "/claims";
  DIR* dir = ::opendir(index.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (!IsValidSandboxName(name)) continue;
    if (PathExists(DirOf(name) + "/state.json")) {
      // Saved, and the maker's EndClaim not yet run (or it died just before it): the
      // entry goes once its claim file has (nobody holds the claim any more).
      if (!PathExists(DirOf(name) + "/creating")) (void)::unlink(ClaimIndexPath(name).c_str());
    } else if (!PathExists(DirOf(name))) {
      // A maker that lost the race, or one between its entry and its rename: the entry
      // goes once it is old enough that no rename can still come.
      if (OlderThan(ClaimIndexPath(name), kTempGraceSeconds)) {
        (void)::unlink(ClaimIndexPath(name).c_str());
      }
    } else {
      out.push_back(std::move(name));
    }
  }
  ::closedir(dir);
  return out;
}

void SandboxStore::RemoveDeadTempClaims() const {
  const std::string root = root_ + "/sandboxes";
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) return;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.rfind(kTempPrefix, 0) == 0) RemoveDeadTemp(root + "/" + name);
  }
  ::closedir(dir);
}

}  // namespace corral::runtime
