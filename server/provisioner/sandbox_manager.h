// The sandboxes `corral serve` hands out: DeerFlow's sandbox_id -> a persistent corral
// sandbox (runtime/sandboxes/persistent.h, named "df-<sandbox_id>", so `corral ps/exec/rm`
// see it) plus its URL token, remembered in the registry (server/provisioner/sandbox_registry.h).
//
// A thread's sandbox is made from the jail provider's spec (JailSandboxProvider::SpecFor:
// the thread's user-data read-write at /mnt/user-data, acp-workspace and skills read-only,
// sandbox.mounts) plus the request's allow-listed extra mounts. An anonymous sandbox
// (thread_id null) gets the thread directory "anon-<sandbox_id>" of its user: a scratch
// user-data of its own, kept after delete like every thread's data.
//
// Lifecycle: create is idempotent per sandbox_id; a sandbox found dead (its init gone) is
// forgotten (record, cgroups, registry entry) the moment it is looked at and by the
// periodic Reap(), which also removes sandboxes idle longer than sandbox.idle_timeout.
// Beyond sandbox.replicas live sandboxes a create evicts the oldest ones idle for at least
// kEvictMinIdleSeconds (never one with a call in flight); server.max_sandboxes is a hard
// cap (429). The daemon's exit keeps every sandbox; the next daemon adopts them.
//
// With sandbox.warm: N a create without extra mounts takes a ready sandbox from the warm
// pool (runtime/pool/warm_pool.h) and claims it for the thread (runtime/pool/warm_claim.h);
// a failed claim removes that warm sandbox and falls back to a cold create.
// Thread-safe; calls that create or remove sandboxes block for milliseconds (run them off
// the I/O threads). Creates, deletes and reaps of one sandbox_id take turns; those of
// different ids run at once (IdLocks). Parent side.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/pool/exec_slot_keeper.h"
#include "runtime/pool/warm_pool.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/spec.h"
#include "server/aio/api.h"
#include "server/provisioner/id_locks.h"
#include "server/provisioner/provision_request.h"
#include "server/provisioner/sandbox_registry.h"

namespace corral::server {

inline constexpr double kEvictMinIdleSeconds = 60;

struct ManagerOptions {
  runtime::ProviderConfig provider;  // base_dir, skills, mounts, idle_timeout, replicas
  runtime::JailSpec base_spec;       // limits, seccomp, namespaces of every sandbox
  int max_sandboxes = 1000;
  // Exec slots for the sandboxes' shells (may be null; must outlive the manager): a warm
  // sandbox's slot follows it through the claim; a sandbox's slot goes at its removal.
  // (The sessions ask for the next one once a shell is up: runtime/sessions/session_core.cc.)
  runtime::ExecSlotKeeper* slots = nullptr;
};

struct SandboxView {
  std::string sandbox_id;
  std::string token;
  std::string status;  // "Running"
};

struct CreateResult {
  int status = 200;    // 200, or the HTTP status of the failure
  std::string detail;  // failure: what went wrong, for {"detail": ...}
  SandboxView view;
};

struct ManagerCounts {
  size_t running = 0;  // live sandboxes, paused ones included
  size_t paused = 0;   // of those, paused (as last seen by a call or the reaper)
  size_t calls_in_flight = 0;
  uint64_t created = 0, deleted = 0, reaped_idle = 0, evicted = 0, found_dead = 0;
  // sandbox.idle_action pause: paused by the reaper, resumed for a call, and removed once
  // idle for sandbox.paused_timeout.
  uint64_t paused_idle = 0, resumed = 0, reaped_paused = 0;
  uint64_t created_warm = 0;  // of `created`, those claimed from the warm pool
  // Of `created`, those made cold while sandbox.warm is on, by why (ColdReason).
  std::map<std::string, uint64_t> created_cold;
  runtime::WarmCounts warm;
};

class SandboxManager {
 public:
  SandboxManager(ManagerOptions options, SandboxRegistry registry, AioApi* aio);

  // Start-up: takes over the registry's live sandboxes, forgets the dead ones. Returns
  // one line per entry dropped, for the log.
  std::vector<std::string> Adopt();
  // Starts refilling the warm pool (sandbox.warm > 0), after Adopt. Returns why it did
  // not start when it is configured but cannot serve this spec (for the log).
  std::optional<std::string> StartWarmPool();
  // SIGTERM: removes the warm sandboxes (nobody owns them); thread sandboxes are kept.
  void StopWarmPool();

  CreateResult Create(const CreateParams& params);
  // nullopt when unknown or dead (a dead one is cleaned up here).
  std::optional<SandboxView> Find(const std::string& sandbox_id);
  std::vector<SandboxView> List();
  // Idempotent: an unknown id is no error.
  Status Delete(const std::string& sandbox_id);

  // The routing check of /sandboxes/{id}/{token}/...: the sandbox when `token` is its
  // token (constant-time) or `key_ok`; nullopt otherwise, with the same work done for an
  // unknown id as for a wrong token. Success counts a call in flight until EndCall.
  std::optional<AioSandboxRef> BeginCall(const std::string& sandbox_id, const std::string& token,
                                         bool key_ok);
  void EndCall(const std::string& sandbox_id);
  // Whether the sandbox is paused (by the reaper's idle_action, or `corral pause` on the
  // host): a call must Resume it first, or be refused when sandbox.resume_on_call is off.
  bool Paused(const std::string& sandbox_id) const;
  Status Resume(const std::string& sandbox_id);

  // Periodic: dead and idle sandboxes go; zombies of inits this process made are reaped.
  void Reap();
  ManagerCounts Counts() const;

 private:
  struct Managed {
    RegistryEntry entry;
    pid_t init_pid = -1;
    uint64_t start_ticks = 0;
    double last_call = 0;  // unix seconds
    int in_flight = 0;
    bool paused = false;  // as last seen (the store's marker is the truth)
  };
  bool Alive(const Managed& m) const;
  // Whether `sandbox_id` is still there and dead, or (min_idle >= 0) idle for at least
  // min_idle seconds with no call in flight: checked again once its lock is held, since a
  // create of the same id may have replaced it after the first look.
  bool StillRemovable(const std::string& sandbox_id, double min_idle) const;
  // Since the last call or exec (`corral exec` touches the store's last_used).
  double IdleSeconds(const Managed& m, double now) const;
  // sandbox.idle_action pause: pauses a sandbox idle for idle_timeout; the id's lock held.
  void PauseLocked(const std::string& sandbox_id);
  // Removes the corral sandbox and the entry; the id's lock (ids_) must be held.
  void RemoveLocked(const std::string& sandbox_id, const char* why);
  // Over sandbox.replicas: removes the longest-idle sandboxes whose ids are free to lock.
  void EvictForSoftCap();
  // waitpid(WNOHANG) on the inits this process spawned: a removed one is our zombie.
  void ReapChildren();
  // After its teardown: waits (briefly) for a removed sandbox's init, if this process
  // spawned it, and reaps it, so that no zombie waits for the next periodic ReapChildren.
  void ReapRemovedInit(pid_t init_pid);
  // The id's lock held; a slot of max_sandboxes reserved (creating_).
  CreateResult MakeLocked(const CreateParams& params);
  // A warm sandbox claimed as req.name, or nullopt (no pool, none ready, or the claim
  // failed: then the warm one is gone and the caller creates cold). Where sandbox.warm is
  // on, a nullopt is counted and logged with its reason: "pool_off" (the configuration
  // cannot be served warm), "spec" (this request's spec cannot), "pool_empty" or
  // "claim_failed".
  std::optional<runtime::SandboxRecord> ClaimWarmLocked(const CreateParams& params,
                                                        const runtime::CreateRequest& req);
  void CountCold(const CreateParams& params, const std::string& reason, const std::string& why);

  const ManagerOptions options_;
  SandboxRegistry registry_;
  AioApi* aio_;
  IdLocks ids_;            // create, delete and reap of one sandbox_id, one at a time
  std::mutex evict_mu_;    // one eviction round at a time
  mutable std::mutex mu_;  // the map, counters and creating_
  size_t creating_ = 0;    // creates under way: they count against max_sandboxes
  std::map<std::string, Managed> sandboxes_;
  std::set<pid_t> children_;  // inits this process spawned, reaped once they die
  std::unique_ptr<runtime::WarmPool>
      warm_;  // null when sandbox.warm is 0 or it cannot serve the spec
  ManagerCounts counts_;
  std::optional<runtime::SandboxStore> store_;  // opened once; nullopt if it cannot be
};

// "df-<sandbox_id>", or "dfh-<32 hex digits>" of a hash when that would pass 64 characters.
std::string CorralNameFor(const std::string& sandbox_id);

}  // namespace corral::server
