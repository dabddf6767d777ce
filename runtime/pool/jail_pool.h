// JailPool: one-shot jails built before their commands are known, so that a run pays
// only for handing the command over and running it. For long-lived callers (a daemon,
// the benchmark); parent side; thread-safe.
//
// Every jail in the pool is a complete fresh jail of the pool's spec — new PID, mount,
// UTS, IPC, network and cgroup namespaces, its own cgroup with the spec's limits, a root
// no other run has seen — prepared by PrepareJail() (runtime/run/supervisor.h) and used for
// exactly one command. Isolation is the same as RunJail's; only the order differs: the
// cgroup attach (an RCU grace period on v1), the clone, the root and the network happen
// while nobody waits. In network.mode allowlist each jail also gets its own corral-netproxy
// before it is cloned (PrepareJail): its decisions are logged under that jail's name
// ("pool-<pid>-<n>"), its summary becomes the run's `network` outcome, and it ends with
// the run, or with the jail when the pool goes. A background thread (started with every signal
// blocked) keeps `size` jails ready, refilling only while no Run() is in progress; a Run() that
// finds none ready prepares one itself.
//
// Jails are cloned by a spawner process (runtime/run/jail_spawner.h) as children of the thread
// that created the pool (their parent-death signal is tied to it): create the pool on a
// thread that outlives it, before starting threads that could hold a lock at the fork, and
// destroy it only after its Run() calls have returned.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/result.h"
#include "runtime/run/supervisor.h"

namespace corral::runtime {

class JailPool {
 public:
  // Validates `base` and starts filling. size >= 1.
  static Result<std::unique_ptr<JailPool>> Create(const JailSpec& base, size_t size);
  ~JailPool();  // stops refilling; jails still ready are killed and their cgroups removed
  JailPool(const JailPool&) = delete;
  JailPool& operator=(const JailPool&) = delete;

  // Whether `spec` can run in this pool's jails: equal to the pool's spec in everything
  // but argv, env, workdir, timeout and output limit, with a working directory inside one of
  // the jails' mounts (one outside them needs a tmpfs of its own: a cold run makes it).
  bool Fits(const JailSpec& spec) const;
  // Why this pool cannot run `spec` ("differs from the pool's spec at /hostname, ..." or
  // a command too large to hand over); nullopt if it can.
  std::optional<std::string> Unfit(const JailSpec& spec) const;
  // Runs `spec`'s command in a ready jail, or in one prepared now if none is ready; a spec
  // that does not fit (or a command too large to hand over) runs through RunJail.
  Result<RunOutcome> Run(const JailSpec& spec, const RunOptions& options);
  // Run() for a spec the caller has found to fit (Unfit() was nullopt): no second check.
  Result<RunOutcome> RunFitting(const JailSpec& spec, const RunOptions& options);
  // Blocks until `size` jails are ready, or the last preparation failed (returned).
  Status WaitUntilFull();

 private:
  JailPool(JailBlueprint blueprint, size_t size);
  void RefillLoop(std::stop_token stop);

  const JailBlueprint blueprint_;  // every jail is prepared from this
  const JailSpec base_key_;        // its spec without the late fields: Fits() compares against this
  std::set<std::string> mount_points_;  // of its jails: a working directory outside them runs cold
  const size_t size_;
  std::unique_ptr<JailSpawner> spawner_;  // clones the jails (runtime/run/jail_spawner.h)
  std::mutex mu_;
  std::condition_variable_any changed_;
  std::deque<PreparedJail> ready_;
  int running_ = 0;  // Run() calls in progress; refilling waits for none
  std::optional<Error> last_error_;
  std::jthread refill_;  // last: stopped and joined before the jails above go
};

}  // namespace corral::runtime
