// JailSpawner: a small single-threaded process that clones a pool's jails for it.
//
// A jail's init is a fork of whoever clones it. Cloned from a pool server — several
// threads, a few MB mapped — every jail cost a copy of the server's page tables, a
// copy-on-write fault (and, the server being multithreaded, a TLB shootdown to the other
// CPUs) for every page the server wrote afterwards, and the init's exit tore the copy
// down again: 1.2-1.5 ms of CPU per jail, measured (perf, 2 cores). The spawner is forked
// once, when the pool is created and before it starts threads, so it is a copy of a
// still small single-threaded process; it plans each jail from the blueprint it inherited
// and clones it with CLONE_PARENT, so the jail is the pool owner's child (reaped, signalled
// and tied by its parent-death signal to the thread that created the pool) exactly as if
// the owner had cloned it. docs/architecture.md asks for this for multithreaded callers.
//
// The cgroup stays the owner's: it is made there and only its fds (clone3
// CLONE_INTO_CGROUP, or the v1 cgroup.procs files) are passed along.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "base/result.h"
#include "base/unique_fd.h"
#include "jail/spawn.h"
#include "runtime/run/run_types.h"

namespace corral::runtime {

class JailSpawner {
 public:
  // Forks the spawner. Call from the thread that will outlive the jails (their parent-death
  // signal follows it) and before other threads that could hold a lock at the fork.
  static Result<std::unique_ptr<JailSpawner>> Start(const JailBlueprint& blueprint);
  ~JailSpawner();  // the spawner exits at EOF on its socket; reaped here
  JailSpawner(const JailSpawner&) = delete;
  JailSpawner& operator=(const JailSpawner&) = delete;

  // A jail of the blueprint waiting for its command (SpawnWaitingJail) in `cgroup`, as a
  // child of this process; it joins the network namespace `net_ns_fd` if >= 0 (its proxy's,
  // network.mode allowlist). Thread-safe.
  Result<jail::JailProcess> Spawn(const CgroupFds& cgroup, int net_ns_fd = -1);
  // False once the spawner stopped answering (killed, say): PrepareJail then clones in
  // this process, as without a spawner.
  bool alive() const { return alive_.load(); }

 private:
  JailSpawner(pid_t pid, UniqueFd socket) : pid_(pid), socket_(std::move(socket)) {}

  pid_t pid_;
  UniqueFd socket_;
  std::mutex mu_;  // one request at a time on the socket
  std::atomic<bool> alive_{true};
};

}  // namespace corral::runtime
