// The warm pool of `corral serve` (sandbox.warm: N): N persistent sandboxes kept ready,
// named "dfw-<16 hex digits>", made from the thread spec with placeholder directories
// (runtime/pool/warm_claim.h). A create takes one and claims it for its thread,
// which costs two mounts and a rename instead of a new jail (cgroups, a clone with ~25
// mounts, pivot_root): server/README.md has the figures.
//
// One background thread (nice 10) refills the pool, at start and after every take — 300 ms
// after it while others are still ready, so that the create that took one and its first
// calls do not share the CPU with a refill — never on an I/O thread and never under the
// manager's create mutex; a failed create is logged and retried with a back-off (1 s
// doubling to 60 s). Nobody owns a warm sandbox but the
// daemon that made it: RemoveStale() (at start) removes every "dfw-*" sandbox a previous
// daemon left (kill -9), and Stop() (SIGTERM) removes this one's.
//
// Each warm sandbox costs what an idle sandbox costs (its init and its cgroup; see
// server/README.md), and counts against nothing (not replicas, not max_sandboxes).
// Thread-safe. Parent side.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/spec/spec.h"

namespace corral::runtime {

class ExecSlotKeeper;

inline constexpr const char* kWarmNamePrefix = "dfw-";

struct WarmSandbox {
  std::string name;
  pid_t init_pid = -1;  // our child: the manager reaps it once the sandbox is removed
};

struct WarmCounts {
  size_t ready = 0;  // the pool depth
  uint64_t made = 0, taken = 0, failed = 0;
};

class WarmPool {
 public:
  // `spec`: a thread's spec (JailSandboxProvider::SpecFor) whose directories are replaced.
  // `slots` (may be null; must outlive the pool): each warm sandbox gets an exec slot
  // asked for as it is made, so that its first shell, after the claim, finds one ready.
  WarmPool(int target, JailSpec spec, ExecSlotKeeper* slots = nullptr);
  ~WarmPool();  // Stop()

  // Why `spec` cannot be served warm (nullopt: it can): a network allow-list (its proxy is
  // started per sandbox name), or a mount below /mnt/user-data or /mnt/acp-workspace (the
  // switch replaces those mounts whole).
  static std::optional<std::string> WhyNot(const JailSpec& spec);

  // Removes the "dfw-*" sandboxes and placeholders in the store (none can be ours yet),
  // and the cgroups of a warm create killed before it recorded its sandbox (`cgroups`: the
  // spec's, where they were made); returns one line per sandbox removed, for the log.
  static std::vector<std::string> RemoveStale(const CgroupSpec& cgroups);

  void Start();  // the refill thread
  // A ready warm sandbox, or nullopt (empty pool, or stopped). Wakes the refill.
  std::optional<WarmSandbox> Take();
  // Stops the refill thread, then removes the ready sandboxes. Idempotent.
  void Stop();
  WarmCounts Counts() const;

 private:
  void Refill();
  void ReapRemoved(bool wait);

  const size_t target_;
  const JailSpec spec_;
  ExecSlotKeeper* const slots_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WarmSandbox> ready_;
  std::vector<pid_t> removed_;  // inits of sandboxes we removed, to reap
  WarmCounts counts_;
  std::chrono::steady_clock::time_point last_take_{};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace corral::runtime
