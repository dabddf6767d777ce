// Where persistent sandboxes are recorded, so that later corral invocations find them.
//
// Layout (owner-only, 0700), under the runtime directory (default /run/corral, or
// $CORRAL_RUNTIME_DIR; /run is a tmpfs, so a reboot forgets every sandbox — correctly, as
// their processes are gone too):
//   <runtime>/sandboxes/<name>/state.json   SandboxRecord (written once, atomically)
//   <runtime>/sandboxes/<name>/lock         flock: shared while an exec starts, exclusive
//                                           for rm
//   <runtime>/sandboxes/<name>/last_used    its mtime is the last exec's start
//   <runtime>/sandboxes/<name>/oom_kills    one line "N" per removed exec cgroup that saw
//                                           N OOM kills (cgroup v1 loses them with it)
//   <runtime>/ids/<id>                       symlink to <name>: find by id without a scan
//   <runtime>/idle/<name>                    idle timeout in seconds, only for sandboxes
//                                            that have one: the idle sweep reads these
// Every exec and create runs the idle sweep, so neither may cost O(number of sandboxes).
// Creating the <name> directory is the atomic step that makes one of two concurrent
// `create`s of a name win. Names and ids are validated before they become paths.
// Parent side.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "jail/landlock.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// [A-Za-z0-9_-]{1,64}
bool IsValidSandboxName(const std::string& name);

struct SandboxRecord {
  int version = 1;   // of this format; an upgraded corral can still read old ones
  std::string id;    // 12 hex digits
  std::string name;  // unique; the directory name
  pid_t init_pid = -1;
  uint64_t init_start_ticks = 0;    // /proc/<pid>/stat starttime: guards against pid reuse
  std::string cgroup_name;          // under the cgroup parent, e.g. "sbx-t1"
  unsigned ns_flags = 0;            // CLONE_NEW* the init holds
  double created_at = 0;            // unix seconds
  double idle_timeout_seconds = 0;  // 0 = never idle out
  JailSpec spec;                    // as created; exec overrides argv/env/workdir/timeout
  // The Landlock rules of the create's plan (its mount list): every exec gets the same.
  jail::LandlockPlan landlock;
};

// A sandbox directory whose record cannot be read or parsed (a corrupt state.json, an I/O
// error), or (name empty) the store's sandboxes directory itself.
struct UnreadableRecord {
  std::string name;
  std::string path;
  std::string why;
};

struct IdleEntry {
  std::string name;
  double timeout_seconds = 0;
};

class SandboxStore {
 public:
  // <runtime dir>/sandboxes (runtime/run/runtime_dir.h): $CORRAL_RUNTIME_DIR if set, else
  // /run/corral for root and $XDG_RUNTIME_DIR/corral for anyone else (rootless mode).
  static Result<SandboxStore> Open();
  explicit SandboxStore(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string DirOf(const std::string& name) const;
  std::string ClaimIndexPath(const std::string& name) const;  // <runtime>/claims/<name>

  // ---- claims (sandbox_claims.cc) ----
  // A sandbox is made in three steps: Claim(name), the work (cgroups, init, proxy), Save.
  // A crash between them must not strand the name. So the claim is a lock held by the
  // maker (an flock on <name>/creating) that also notes what the maker has made so far
  // (NotePending); once the record is saved, EndClaim drops it. A claim whose lock is
  // free and which has no record was left by a maker that died: TakeStaleClaim hands it
  // (and its notes) to whoever undoes it (runtime/sandboxes/persistent.h).
  //
  // Claims `name`: the returned fd holds the claim. kAlreadyExists if another sandbox has
  // the name or is being made under it. The directory appears at once whole (made under
  // a temporary name, then renamed), so nobody ever sees a claim without its lock.
  Result<UniqueFd> Claim(const std::string& name);
  // Notes in the held claim what the maker has made so far (the record in progress).
  Status NotePending(int claim_fd, const SandboxRecord& pending) const;
  // After Save: the claim's notes go (the record says it all now); close the fd after.
  void EndClaim(const std::string& name) const;
  struct StaleClaim {
    UniqueFd lock;                         // the claim's lock, now held by the caller
    std::optional<SandboxRecord> pending;  // the dead maker's last note, if any
  };
  // The claim on `name` if its maker died before saving a record; nullopt if the name
  // has a record, is being made right now, or is free.
  Result<std::optional<StaleClaim>> TakeStaleClaim(const std::string& name) const;
  // Names claimed without a record (being made, or left by a dead maker), from the index
  // of claims (<runtime>/claims/<name>: only creates under way, never every sandbox).
  std::vector<std::string> ClaimsWithoutRecord() const;
  // Removes the temporary claim directories of makers that died before renaming them (a
  // scan of every sandbox's directory: `corral ps` and the daemon's start run it).
  void RemoveDeadTempClaims() const;
  // Removes the directory of a stale claim (after what it noted was undone).
  Status RemoveStaleClaim(const std::string& name) { return RemoveDir(name); }

  // Writes the record of a claimed name (atomically: temp file + rename).
  Status Save(const SandboxRecord& record);
  // By name or by id.
  Result<SandboxRecord> Find(const std::string& name_or_id) const;
  // Every readable record; the ones that exist but cannot be read go to `unreadable` (a
  // directory without a record is a create in progress or a removal, not a problem).
  std::vector<SandboxRecord> List(std::vector<UnreadableRecord>* unreadable = nullptr) const;
  // Sandboxes created with an idle timeout (from the idle index, not the records).
  std::vector<IdleEntry> IdleCandidates() const;
  // Removes the directory of `name` and its index entries (after the sandbox is torn down).
  // With an unreadable record the id index is searched for entries naming `name`.
  Status Forget(const std::string& name);
  // Moves the record of the sandbox `from` to the name `to.name` (a warm sandbox claimed
  // for a thread, runtime/pool/warm_claim.h): `to` is written under its name (with
  // its own idle entry), the id index is switched to it atomically, then `from`'s
  // directory and idle entry go. `to.id` must be `from`'s id. The caller holds `from`'s
  // lock exclusively. On failure `from` is left as it was (or, if only the last step
  // failed, both exist and the error says so).
  Status Rename(const std::string& from, const SandboxRecord& to);

  // flock on <name>/lock; shared = LOCK_SH, else LOCK_EX. The fd holds the lock. With
  // wait = false a lock held elsewhere is an error with errno EWOULDBLOCK.
  Result<UniqueFd> Lock(const std::string& name, bool shared, bool wait = true) const;

  Status TouchLastUsed(const std::string& name) const;
  // Unix seconds of the last exec (or of creation).
  double LastUsed(const std::string& name) const;

  // OOM kills of exec cgroups that were removed: cgroup v1 counts a kill only in the
  // victim's cgroup, so the sandbox-wide figure would lose them with the exec's leaf.
  // Appends one line (O_APPEND: concurrent execs do not lose each other's counts).
  Status AddRemovedOomKills(const std::string& name, int64_t kills) const;
  int64_t RemovedOomKills(const std::string& name) const;  // their sum; 0 if none

  // Pause (runtime/sandboxes/pause.h). The marker <name>/paused says that the sandbox's
  // frozen cgroup is `corral pause`'s doing, not a removal cut short; its mtime is when.
  std::optional<double> PausedSince(const std::string& name) const;  // unix seconds
  Status SetPaused(const std::string& name, bool paused) const;
  // flock on <name>/pause.lock (made on first use): pause and resume of one sandbox take
  // turns. Execs do not take it: a pause freezes the execs running too.
  Result<UniqueFd> LockPause(const std::string& name) const;

 private:
  std::string IdPath(const std::string& id) const;
  Status UnlinkIdsNaming(const std::string& name) const;
  std::string IdlePath(const std::string& name) const;
  // The directory of `name` and its idle entry, not the id index.
  Status RemoveDir(const std::string& name);
  std::string root_;
};

// Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), or
// nullopt if it does not exist.
std::optional<uint64_t> ProcessStartTicks(pid_t pid);

// Whether `pid` is the process that started at `start_ticks` and has not begun to exit:
// not a zombie, not dead, and not PF_EXITING (a killed PID 1 stays in that state while
// the kernel kills and reaps the rest of its PID namespace, with its root already gone).
bool ProcessRunning(pid_t pid, uint64_t start_ticks);

}  // namespace corral::runtime
