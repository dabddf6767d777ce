#include "runtime/run/jail_spawner.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/fd_pair.h"
#include "base/frames.h"
#include "base/json_input.h"
#include "jail/process_title.h"
#include "jail/syscalls.h"
#include "runtime/run/supervisor.h"

namespace corral::runtime {

namespace {

// Request: {"clone_into": bool, "attach": n, "netns": bool} with the cgroup's fds (the
// clone3 target first, if any, then n cgroup.procs files) and, last, the network namespace
// the jail joins (an allow-list jail's: its proxy listens there). Reply: {"pid": N} with the init's
// pidfd, setup channel and status channel, or {"error": message, "code": ErrorCode, "errno": e}.

void Answer(int socket, const JailBlueprint& blueprint, const std::string& frame,
            const std::vector<UniqueFd>& fds) {
  nlohmann::json j = ParseJsonInputOrDiscarded(frame);
  size_t attach = j.is_object() ? j.value("attach", size_t{0}) : 0;
  bool clone_into = j.is_object() && j.value("clone_into", false);
  bool netns = j.is_object() && j.value("netns", false);
  if (fds.size() != attach + (clone_into ? 1 : 0) + (netns ? 1 : 0)) {
    (void)SendFrame(socket,
                    nlohmann::json({{"error", "spawner: malformed request"}, {"errno", 0}}).dump());
    return;
  }
  CgroupFds cgroup;
  if (clone_into) cgroup.clone_into = fds[0].get();
  const size_t attach_end = fds.size() - (netns ? 1 : 0);
  for (size_t i = clone_into ? 1 : 0; i < attach_end; ++i) cgroup.attach.push_back(fds[i].get());
  const int net_ns_fd = netns ? fds.back().get() : -1;
  auto jail = SpawnWaitingJail(blueprint.spec, cgroup, /*clone_parent=*/true, net_ns_fd);
  if (!jail) {
    (void)SendFrame(socket, nlohmann::json({{"error", jail.error().message()},
                                            {"code", static_cast<int>(jail.error().code())},
                                            {"errno", jail.error().sys_errno()}})
                                .dump());
    return;
  }
  (void)SendFrame(socket, nlohmann::json({{"pid", jail->pid()}}).dump(),
                  {jail->pidfd(), jail->setup_fd(), jail->status_fd()});
  // The owner has its own copies now (or, if the reply was lost, will never learn of the
  // jail: its lifeline, the setup channel, then hangs up and the init exits).
  jail->Release();
}

[[noreturn]] void ServeSpawns(int socket, const JailBlueprint& blueprint, pid_t owner) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != owner) ::_exit(0);
  jail::SetProcessTitle("corral-spawner");
  // Keep stdio (for logging) and the socket; everything else belonged to the owner.
  jail::sys::CloseRange(3, static_cast<unsigned>(socket) - 1, 0);
  jail::sys::CloseRange(static_cast<unsigned>(socket) + 1, ~0U, 0);
  for (;;) {
    std::vector<UniqueFd> fds;
    auto frame = ReceiveFrame(socket, &fds);
    if (!frame) ::_exit(0);  // the owner closed its end: the pool is gone
    Answer(socket, blueprint, *frame, fds);
  }
}

}  // namespace

Result<std::unique_ptr<JailSpawner>> JailSpawner::Start(const JailBlueprint& blueprint) {
  ASSIGN_OR_RETURN(SocketPair pair, MakeSocketPair());
  UniqueFd ours = std::move(pair.one), theirs = std::move(pair.other);
  const pid_t owner = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork jail spawner");
  if (pid == 0) {
    ours.Reset();
    ServeSpawns(theirs.get(), blueprint, owner);
  }
  return std::unique_ptr<JailSpawner>(new JailSpawner(pid, std::move(ours)));
}

JailSpawner::~JailSpawner() {
  // shutdown, not just close: a process forked from ours since (holding a copy of the
  // socket) must not keep the spawner waiting.
  ::shutdown(socket_.get(), SHUT_RDWR);
  socket_.Reset();
  int status;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

Result<jail::JailProcess> JailSpawner::Spawn(const CgroupFds& cgroup, int net_ns_fd) {
  std::vector<int> fds;
  if (cgroup.clone_into >= 0) fds.push_back(cgroup.clone_into);
  fds.insert(fds.end(), cgroup.attach.begin(), cgroup.attach.end());
  if (net_ns_fd >= 0) fds.push_back(net_ns_fd);
  nlohmann::json request = {{"clone_into", cgroup.clone_into >= 0},
                            {"attach", cgroup.attach.size()},
                            {"netns", net_ns_fd >= 0}};
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<UniqueFd> got;
  Status sent = SendFrame(socket_.get(), request.dump(), fds);
  auto frame = sent ? ReceiveFrame(socket_.get(), &got) : Result<std::string>(sent.error());
  if (!frame) {
    alive_ = false;
    return frame.error().WithContext("jail spawner");
  }
  auto parsed = ParseJsonInput(*frame);
  auto* reply_json = std::get_if<nlohmann::json>(&parsed);
  if (reply_json == nullptr || !reply_json->is_object()) {
    return Error(ErrorCode::kIo, "jail spawner: malformed reply");
  }
  const nlohmann::json& reply = *reply_json;
  if (reply.contains("error")) {
    auto code = static_cast<ErrorCode>(reply.value("code", static_cast<int>(ErrorCode::kIo)));
    return Error(code, reply.value("error", ""), reply.value("errno", 0));
  }
  if (got.size() != 3 || !reply.contains("pid")) {
    return Error(ErrorCode::kIo, "jail spawner: malformed reply");
  }
  return jail::JailProcess(reply.value("pid", pid_t{-1}), std::move(got[0]), std::move(got[1]),
                           std::move(got[2]));
}

}  // namespace corral::runtime
