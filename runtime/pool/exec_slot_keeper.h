// ExecSlotKeeper: exec slots (persistent.h) kept ready for a long-lived caller — the pool
// server (`corral exec --pool`) and `corral serve` (a warm sandbox's first shell) — so that
// the next exec into a sandbox finds a process already in its namespaces and in an exec
// cgroup of its own. On cgroup v1 that join waits for an RCU grace period, the bulk of an
// exec's latency; with a slot it is paid ahead, off the caller's path.
//
// At most one ready slot per sandbox, at most `max_slots` in all: a request beyond that
// evicts the slot made longest ago. Slots are prepared one at a time by the keeper's
// own thread, which lives as long as the keeper: a slot's parent-death signal is tied to
// the thread that made it. A slot of a sandbox removed since (here or by `corral rm`) dies
// with it; the thread watches the ready slots' pidfds and reaps a dead one at once (a
// zombie left in the sandbox's PID namespace would hold up its init's exit). ExecInSlot
// refuses a dead one too, so a stale slot is never used.
//
// Each waiting slot is one process in its sandbox (seen by the sandbox's `ps`, counted in
// its pids limit); the caller decides which sandboxes are worth one. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {

struct ExecSlotKeeperOptions {
  size_t max_slots = 64;
  ExecSlotOptions slot;  // how every slot is made
};

class ExecSlotKeeper {
 public:
  explicit ExecSlotKeeper(ExecSlotKeeperOptions options);
  // Stops the thread; the waiting slots are killed and their cgroups removed.
  ~ExecSlotKeeper();
  ExecSlotKeeper(const ExecSlotKeeper&) = delete;
  ExecSlotKeeper& operator=(const ExecSlotKeeper&) = delete;

  // The ready slot of the sandbox with this name or id (it leaves the keeper), or null.
  std::unique_ptr<ExecSlot> Take(const std::string& name_or_id);
  // Asks for a slot for the sandbox with this name or id, prepared in the background
  // unless one is ready or queued. At most max_slots requests wait: beyond, the oldest
  // goes (its slot would be the first evicted anyway).
  void Request(const std::string& name_or_id);
  // The sandbox's store record changed under the same id and init (a warm sandbox was
  // claimed: renamed, new spec): its ready slot, if any, now serves the new record.
  void Update(const SandboxRecord& record);
  // The sandbox is about to be removed: its ready slot goes now (killed, cgroup removed).
  // A slot being prepared (for any sandbox) is waited for first, so that none is halfway
  // into this sandbox while its removal kills what is inside and removes its cgroups.
  void Drop(const std::string& name_or_id);
  // Blocks until nothing is queued or being prepared.
  void WaitIdle();

  struct Counts {
    size_t ready = 0;
    uint64_t prepared = 0, failed = 0, taken = 0, evicted = 0;
  };
  Counts counts() const;

 private:
  struct Ready {
    std::unique_ptr<ExecSlot> slot;
    uint64_t made = 0;  // which preparation made it (started_ then): the lowest is evicted
  };
  void Loop(std::stop_token stop);
  // Removes (and reaps, outside the lock) the ready slots whose process has exited.
  void DropExited(std::unique_lock<std::mutex>& lock);
  // Sleeps until a request, the stop, or the exit of a ready slot's process.
  void WaitForWork(std::unique_lock<std::mutex>& lock);
  void Wake();
  // The ready entry of the sandbox with this name or id; mu_ held.
  std::map<std::string, Ready>::iterator FindReady(const std::string& name_or_id);

  const ExecSlotKeeperOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Ready> ready_;   // by sandbox id
  std::deque<std::string> queue_;        // sandbox names or ids to prepare for
  uint64_t started_ = 0, finished_ = 0;  // preparations begun and ended; one runs if they differ
  std::optional<SandboxRecord> update_while_busy_;  // an Update for the slot being made
  Counts counts_;
  UniqueFd wake_;  // an eventfd: Request and the destructor wake the thread through it
  std::condition_variable idle_;
  std::condition_variable finished_cv_;  // a preparation ended
  std::jthread thread_;                  // last: started once the rest exists, stopped first
};

}  // namespace corral::runtime
