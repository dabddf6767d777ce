// PoolServer: a JailPool (runtime/pool/jail_pool.h) behind a unix socket — `corral pool` — so
// that `corral run`, a short-lived process per command, gets a jail that was built before
// it asked. The client sends its spec, its stdio fds and, while the command runs, the
// signals it receives (runtime/pool/pool_protocol.h); the server runs the command in a pooled
// jail when the spec fits the pool's, supervises it exactly as RunJail would, and sends
// the outcome back. A spec that does not fit gets "cold": the client runs it itself.
//
// `corral exec` goes through the same socket: the server keeps one exec slot
// (runtime/sandboxes/persistent.h: a process already in the sandbox's namespaces and in an exec
// cgroup of its own, waiting for its command) per sandbox it has served, refilled after
// each exec; an exec that finds none is answered "cold" and runs the normal way, and the
// server prepares one for the next.
//
// Each jail is still used once: fresh namespaces, cgroup and root per run. Only the root
// user (the server's own uid) may connect: the socket is 0600 and the peer's uid is
// checked. Threads: one per connection, started ahead (see SpawnAcceptor), every signal
// blocked in them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/pool/exec_slot_keeper.h"
#include "runtime/pool/jail_pool.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

struct PoolServerOptions {
  std::string socket_path;  // empty: DefaultPoolSocket()
  size_t size = 2;          // jails kept ready
};

class PoolServer {
 public:
  // Binds the socket (refusing one another server answers on; replacing a stale one) and
  // starts filling the pool.
  static Result<std::unique_ptr<PoolServer>> Start(const JailSpec& spec,
                                                   const PoolServerOptions& options);
  // Stops accepting, interrupts commands still running (their clients get an outcome
  // with interrupted_by SIGHUP), waits for them, kills the ready jails, removes the socket.
  ~PoolServer();
  PoolServer(const PoolServer&) = delete;
  PoolServer& operator=(const PoolServer&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  JailPool& pool() { return *pool_; }
  // Accepts connections until `stop_fd` is readable (a signalfd, an eventfd).
  Status Serve(int stop_fd);

 private:
  static constexpr int kSpareAcceptors = 2;
  static constexpr size_t kMaxExecSlots = 64;  // sandboxes with a slot kept ready

  PoolServer() = default;
  void SpawnAcceptor();  // mu_ held
  void AcceptLoop();
  void Handle(UniqueFd connection);
  void HandleRequest(int connection, const std::string& request, std::vector<UniqueFd> fds);
  void HandleRun(int connection, const RunOptions& options, LimitsSpec* limits);
  void HandleExec(int connection, const RunOptions& options, LimitsSpec* limits);

  std::string socket_path_;
  ino_t socket_ino_ = 0;  // removed on exit only if it is still ours
  UniqueFd listener_;     // non-blocking: several threads wait on it
  UniqueFd stop_event_;   // an eventfd: readable once the server stops
  std::unique_ptr<JailPool> pool_;
  std::mutex mu_;
  std::condition_variable idle_;  // threads_ went down
  bool stopping_ = false;
  int threads_ = 0;
  int idle_acceptors_ = 0;
  std::set<int> connections_;  // being handled; shut down on exit
  // Exec slots: taken by HandleExec, prepared by the keeper's thread (whose children they
  // are, so that their parent-death signal outlives any connection).
  std::unique_ptr<ExecSlotKeeper> slots_;  // destroyed first in the destructor
};

}  // namespace corral::runtime
