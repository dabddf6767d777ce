// The inside of AioApi (server/aio/api.h), shared by its route files: routes.cc (the route
// table), api.cc (dispatch, v1/sandbox, lifecycle), file_routes.cc, shell_routes.cc,
// bash_routes.cc.
// Private to server/aio/.
//
// Threads: a WorkPool of kFileWorkers for file operations; two per live shell/bash session
// (runtime/sessions/shell_session.h); one per running one-shot `bash/exec`; one orphan-pipe sink
// for the process (runtime/sessions/orphan_sink.h). Handle itself never waits for a command.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/sessions/shell_session.h"
#include "server/aio/api.h"
#include "server/aio/envelope.h"
#include "server/aio/workers.h"
#include "server/http/route_table.h"

namespace corral::server {
namespace aio {
// The shell-session engine is a runtime service (runtime/sessions/); the AIO face names its
// types as its own.
using runtime::sessions::CmdStatus;
using runtime::sessions::CmdStatusName;
using runtime::sessions::CommandRequest;
using runtime::sessions::CommandState;
using runtime::sessions::RandomUuid;
using runtime::sessions::SessionOptions;
using runtime::sessions::ShellSession;
using runtime::sessions::SteadyTime;

// An exit code as JSON: null while there is none.
inline nlohmann::json OptInt(const std::optional<int>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace aio

enum class SessionKind { kShell, kBash };

struct AioApi::Impl {
  static constexpr size_t kFileWorkers = 4;
  // Sessions made by calls without an id (DeerFlow's snapshot sends none, so every call
  // makes one): the oldest idle ones beyond this many per sandbox are closed (their
  // background jobs live on).
  static constexpr size_t kImplicitKeep = 4;
  // ...and idle ones older than this are closed too.
  static constexpr std::chrono::minutes kImplicitIdle{10};

  explicit Impl(AioApiOptions o) : options(std::move(o)) {}

  AioApiOptions options;
  aio::WorkPool files{kFileWorkers};

  struct SandboxSessions {
    std::map<std::string, std::shared_ptr<aio::ShellSession>> shell, bash;
    std::deque<std::pair<SessionKind, std::string>> implicit;  // oldest first
    // A shell started ahead for the next call without an id (DeerFlow's snapshot sends
    // none): that call then skips the shell's start. Made on the first such call.
    std::shared_ptr<aio::ShellSession> spare;
  };
  mutable std::mutex mu;
  std::map<std::string, SandboxSessions> sandboxes;         // by sandbox_id
  std::vector<std::shared_ptr<aio::ShellSession>> retired;  // closing; destroyed when finished
  bool shutting_down = false;
  std::chrono::steady_clock::time_point last_sweep{};

  // One-shot bash execs in flight: their interrupt sockets (a byte stops one).
  std::map<uint64_t, int> oneshots;
  uint64_t next_oneshot = 0;
  std::condition_variable oneshots_cv;

  // --- sessions (api.cc) ---
  std::shared_ptr<aio::ShellSession> Find(const std::string& sandbox_id, SessionKind kind,
                                          const std::string& id);
  // A new session (`id` empty: a fresh random one, counted as implicit), or the existing
  // one of that id. Error when the sandbox has max_sessions_per_sandbox sessions already.
  Result<std::shared_ptr<aio::ShellSession>> Open(const AioSandboxRef& ref, SessionKind kind,
                                                  const std::string& id, aio::SessionOptions base,
                                                  bool* created = nullptr);
  // Closes (soft) and forgets one session; false if unknown.
  bool Remove(const std::string& sandbox_id, SessionKind kind, const std::string& id);
  std::vector<std::shared_ptr<aio::ShellSession>> List(const std::string& sandbox_id,
                                                       SessionKind kind);
  void Retire(std::shared_ptr<aio::ShellSession> s);  // mu held
  void DropFinished();                                // mu held
  void CloseIdleImplicit();                           // mu held

  // --- routes: routes.cc declares them all in one table (method + path -> handler) ---
  // One call below a sandbox's URL as its handler sees it.
  struct Call {
    const AioSandboxRef& ref;
    PathParams params;  // what the route's {name} segments bound
    HttpRequest request;
  };
  using Handler = void (Impl::*)(Call& call, Reply reply);
  static const RouteTable<Handler>& Routes();

  void SandboxInfo(Call& call, Reply reply);  // api.cc
  // file_routes.cc
  void FileDownload(Call& call, Reply reply);
  void FileRead(Call& call, Reply reply);
  void FileWrite(Call& call, Reply reply);
  void FileList(Call& call, Reply reply);
  void FileFind(Call& call, Reply reply);
  void FileGrep(Call& call, Reply reply);
  void FileSearch(Call& call, Reply reply);
  // shell_routes.cc
  void ShellExec(Call& call, Reply reply);
  void ShellView(Call& call, Reply reply);
  void ShellWait(Call& call, Reply reply);
  void ShellKill(Call& call, Reply reply);
  void ShellWrite(Call& call, Reply reply);
  void ShellCreateSession(Call& call, Reply reply);
  void ShellUpdateSession(Call& call, Reply reply);
  void ShellListSessions(Call& call, Reply reply);
  void ShellDeleteSessions(Call& call, Reply reply);
  void ShellSessionStats(Call& call, Reply reply);
  void ShellDeleteSession(Call& call, Reply reply);
  // bash_routes.cc
  void BashExec(Call& call, Reply reply);
  void BashOutput(Call& call, Reply reply);
  void BashKill(Call& call, Reply reply);
  void BashWrite(Call& call, Reply reply);
  void BashCreateSession(Call& call, Reply reply);
  void BashListSessions(Call& call, Reply reply);
  void BashCloseSession(Call& call, Reply reply);
  void OneShotBash(const AioSandboxRef& ref, aio::CommandRequest request,
                   std::optional<double> hard_timeout, size_t max_output, Reply reply);
};

namespace aio {
// "2026-12-02T01:23:45.678Z".
std::string IsoTime(std::chrono::system_clock::time_point t);
// Cuts `s` to at most `limit` bytes keeping head and tail, on UTF-8 boundaries, with a
// note in the middle saying how much went.
std::string MiddleTruncate(const std::string& s, size_t limit);
}  // namespace aio

}  // namespace corral::server
