#include "runtime/pool/pool_server.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/pool/pool_protocol.h"
#include "runtime/pool/pool_request.h"
#include "runtime/pool/pool_socket.h"
#include "runtime/run/outcome_report.h"
#include "runtime/run/phase_trace.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/sandbox_store.h"

namespace corral::runtime {

namespace {

constexpr int kRequestTimeoutSeconds = 5;  // a client that connects and says nothing
// Two captured streams of this size, JSON-escaped (or as byte arrays), fit a reply frame.
constexpr int64_t kMaxPooledOutputBytes = 16 * 1024 * 1024;

void Reply(int connection, const nlohmann::json& reply) {
  if (auto st = SendFrame(connection, reply.dump()); !st) {
    spdlog::debug("pool: reply not delivered: {}", st.error().message());
  }
}

void ReplyError(int connection, const std::string& message) {
  Reply(connection, {{"kind", "error"}, {"message", message}});
}

void SendOutcome(int connection, const RunOutcome& outcome) {
  // The outcome has its own frame, so that nobody parses megabytes of captured output
  // twice; both go out in one send.
  std::string wire = OutcomeToWire(outcome);
  if (auto st = SendFrames(connection, {R"({"kind":"outcome"})", wire}); !st) {
    spdlog::debug("pool: outcome not delivered: {}", st.error().message());
  }
}

// For the front program (a "brief" request): what it prints and its exit code, worded
// here so that it need not understand an outcome.
void SendBriefOutcome(int connection, const RunOutcome& outcome, const LimitsSpec& limits) {
  nlohmann::json reply = {{"kind", "outcome"},
                          {"exit_code", CliExitCode(outcome)},
                          {"report", OutcomeReport(outcome, limits, /*with_reason=*/true)}};
  if (auto st = SendFrame(connection, reply.dump()); !st) {
    spdlog::debug("pool: outcome not delivered: {}", st.error().message());
  }
}

bool PeerIsOurUser(int connection) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return ::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
         cred.uid == ::geteuid();
}

}  // namespace

Result<std::unique_ptr<PoolServer>> PoolServer::Start(const JailSpec& spec,
                                                      const PoolServerOptions& options) {
  std::unique_ptr<PoolServer> server(new PoolServer());
  server->socket_path_ = options.socket_path.empty() ? DefaultPoolSocket() : options.socket_path;
  if (options.socket_path.empty() && ::mkdir(RuntimeDir().c_str(), 0700) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "mkdir " + RuntimeDir());
  }
  ASSIGN_OR_RETURN(server->listener_, ListenOnPoolSocket(server->socket_path_));
  server->stop_event_.Reset(::eventfd(0, EFD_CLOEXEC));
  if (!server->stop_event_) return Error::FromErrno(errno, "eventfd");
  struct stat st {};
  if (::stat(server->socket_path_.c_str(), &st) == 0) server->socket_ino_ = st.st_ino;
  auto pool = JailPool::Create(spec, options.size);
  if (!pool) {
    ::unlink(server->socket_path_.c_str());
    return pool.error();
  }
  server->pool_ = std::move(*pool);
  server->slots_ = std::make_unique<ExecSlotKeeper>(
      ExecSlotKeeperOptions{.max_slots = kMaxExecSlots, .slot = {}});
  return server;
}

PoolServer::~PoolServer() {
  struct stat st {};
  if (socket_ino_ != 0 && ::stat(socket_path_.c_str(), &st) == 0 && st.st_ino == socket_ino_) {
    ::unlink(socket_path_.c_str());
  }
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  uint64_t one = 1;
  if (stop_event_) (void)!::write(stop_event_.get(), &one, sizeof one);  // idle acceptors
  // A shut-down connection reads as EOF: its command is stopped as if the client hung up.
  for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  idle_.wait(lock, [&] { return threads_ == 0; });
  lock.unlock();
  slots_.reset();  // kills the waiting slots, removes their cgroups
  pool_.reset();
}

Status PoolServer::Serve(int stop_fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (idle_acceptors_ < kSpareAcceptors) SpawnAcceptor();
  }
  for (;;) {
    pollfd fd{stop_fd, POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0 && errno != EINTR) return Error::FromErrno(errno, "poll");
    if (fd.revents != 0) return Ok();
  }
}

// Threads that wait in accept() ahead of the next client, so that a connection costs no
// thread creation on its path; one that takes a connection starts a replacement only if
// it was the last one waiting. Every signal is blocked in them: the stop signals are the
// main thread's.
void PoolServer::SpawnAcceptor() {
  ++threads_;
  ++idle_acceptors_;
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread([this] { AcceptLoop(); }).detach();
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void PoolServer::AcceptLoop() {
  bool idle = true;  // counted in idle_acceptors_
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_event_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents != 0) break;
    // Non-blocking: another acceptor may have taken it (EAGAIN), or the client left.
    UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection) {
      // Out of descriptors: the listener stays readable, so back off instead of spinning.
      if (errno == EMFILE || errno == ENFILE) ::usleep(100 * 1000);
      continue;
    }
    if (!PeerIsOurUser(connection.get())) {
      ReplyError(connection.get(), "permission denied: only uid " + std::to_string(::geteuid()) +
                                       " may use this pool");
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
      idle = false;
      --idle_acceptors_;
      if (idle_acceptors_ == 0) SpawnAcceptor();
      connections_.insert(connection.get());
    }
    Handle(std::move(connection));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || idle_acceptors_ >= kSpareAcceptors) break;  // enough others wait
    idle = true;
    ++idle_acceptors_;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (idle) --idle_acceptors_;
  --threads_;
  idle_.notify_all();
}

void PoolServer::Handle(UniqueFd connection) {
  int fd = connection.get();
  // Bounds every blocking read of the request; the interrupt bytes that may follow it are
  // read without blocking (runtime/run/watch.cc).
  timeval timeout{kRequestTimeoutSeconds, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::vector<UniqueFd> fds;
  auto request = ReceiveFrame(fd, &fds);
  if (request) {
    HandleRequest(fd, *request, std::move(fds));
  } else {
    spdlog::debug("pool: {}", request.error().message());
  }
  std::lock_guard<std::mutex> lock(mu_);
  connections_.erase(fd);
  connection.Reset();
}

void PoolServer::HandleRequest(int connection, const std::string& request,
                               std::vector<UniqueFd> fds) {
  auto head = ParsePoolRequestHead(request);
  if (!head) return ReplyError(connection, "malformed request: " + head.error().message());
  const std::string& op = head->op;
  if (op == "wait_ready") {
    Status full = pool_->WaitUntilFull();
    if (!full) return ReplyError(connection, full.error().message());
    slots_->WaitIdle();
    return Reply(connection, {{"kind", "ready"}});
  }
  if (op != "run" && op != "exec") return ReplyError(connection, "malformed request");
  if (fds.size() != 3) return ReplyError(connection, "a request carries stdin, stdout, stderr");
  // The command gets the client's stdio; the connection carries its stop signals, and the
  // answer goes out as soon as the outcome is known (the teardown follows).
  RunOptions options;
  options.capture_output = head->capture;
  options.pass_stdin = head->pass_stdin;
  options.stdin_fd = fds[0].get();
  options.stdout_fd = fds[1].get();
  options.stderr_fd = fds[2].get();
  options.interrupt_fd = connection;
  const bool brief = head->brief;
  LimitsSpec limits;  // the run's, for the brief report; set by HandleRun/HandleExec
  options.on_outcome = [&](const RunOutcome& outcome) {
    fds.clear();  // the client's stdio: a pipe reader waits for our copy to close too
    if (brief) {
      SendBriefOutcome(connection, outcome, limits);
    } else {
      SendOutcome(connection, outcome);
    }
    // The client was just woken, often onto this CPU, where the teardown that follows
    // could keep it waiting while the other CPU idles (seen: 0.8 ms on 2 vCPUs).
    sched_yield();
  };
  if (op == "exec") return HandleExec(connection, options, &limits);
  HandleRun(connection, options, &limits);
}

void PoolServer::HandleRun(int connection, const RunOptions& options, LimitsSpec* limits) {
  PhaseTrace trace;
  auto spec_frame = ReceiveFrame(connection);
  if (!spec_frame) return ReplyError(connection, "request spec: " + spec_frame.error().message());
  auto spec = ParseRunSpecFrame(*spec_frame);
  if (!spec) return ReplyError(connection, "request spec: " + spec.error().message());
  trace.Mark("spec");
  if (auto why = pool_->Unfit(*spec)) {
    return Reply(connection, {{"kind", "cold"}, {"reason", *why}});
  }
  if (options.capture_output && spec->limits.output_limit_bytes > kMaxPooledOutputBytes) {
    return Reply(connection, {{"kind", "cold"},
                              {"reason", "captured output limit above " +
                                             std::to_string(kMaxPooledOutputBytes) +
                                             " bytes per stream does not fit a reply frame"}});
  }
  trace.Mark("fit");
  *limits = spec->limits;
  auto outcome = pool_->RunFitting(*spec, options);
  if (!outcome) ReplyError(connection, outcome.error().message());
}

void PoolServer::HandleExec(int connection, const RunOptions& options, LimitsSpec* limits) {
  auto frame = ReceiveFrame(connection);
  if (!frame) return ReplyError(connection, "exec request: " + frame.error().message());
  auto parsed = ParseExecFrame(*frame);
  if (!parsed) return ReplyError(connection, parsed.error().message());
  ExecRequest request = std::move(*parsed);
  // A slot ready for this sandbox (by name or id) is used without reading the store:
  // ExecInSlot checks that the sandbox it was made for still lives, with the same init.
  std::unique_ptr<ExecSlot> slot = slots_->Take(request.sandbox);
  if (!slot) {
    auto store = SandboxStore::Open();
    auto record = store ? store->Find(request.sandbox) : Result<SandboxRecord>(store.error());
    if (!record) {  // the normal exec says what is wrong, in its own words
      return Reply(connection, {{"kind", "cold"}, {"reason", record.error().message()}});
    }
    slots_->Request(record->id);
    return Reply(connection, {{"kind", "cold"}, {"reason", "no exec slot ready for this sandbox"}});
  }
  std::string sandbox_id = slot->record.id;
  *limits = slot->record.spec.limits;
  if (request.timeout_seconds) limits->timeout_seconds = *request.timeout_seconds;
  request.io = options;  // answered before the exec's cgroup is removed
  std::string unusable;
  auto outcome = ExecInSlot(std::move(slot), request, &unusable);
  slots_->Request(sandbox_id);
  if (!outcome) return ReplyError(connection, outcome.error().message());
  if (!*outcome) return Reply(connection, {{"kind", "cold"}, {"reason", unusable}});
}

}  // namespace corral::runtime
