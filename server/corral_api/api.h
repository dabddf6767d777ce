// corral's own HTTP API, /api/corral/v1/... (the router has checked X-API-Key already):
// persistent sandboxes with corral's full options (limits, seccomp, namespaces, mounts
// under sandbox.base_dir), exec returning the JSON outcome of `corral exec --json`, stats,
// and file operations through the jail provider's safe resolution. The OpenAPI document
// (server/corral_api/openapi.json, embedded at build time) is served at .../openapi.json.
//
// It talks to the runtime directly (runtime/sandboxes/persistent.h): its sandboxes are the
// CLI's (`corral ps/exec/rm` see them, and it sees the provisioner's df-<id> ones). Errors
// are {"error": {"code", "message", "field"}} (server/corral_api/request.h).
//
// Threads: nothing blocks the caller's (I/O) thread. Creates, removals, look-ups and file
// operations run on a small pool of long-lived workers. Each exec runs on a thread of its
// own that ends when the exec has returned: the exec's jail process gets a parent-death
// signal tied to the thread that cloned it, so that thread must outlive the exec. At most
// max_execs at once (429 + Retry-After beyond). A reaper thread removes sandboxes past
// their idle_timeout every reap_period_seconds (runtime::ReapIdleSandboxes: any
// persistent sandbox's, as `corral reap` would). Destroying the CorralApi drops the replies
// of execs still running (their threads end with the process). Thread-safe. Parent side.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec.h"
#include "server/http/message.h"
#include "server/http/route_table.h"

namespace corral::server {

inline constexpr const char* kCorralApiPrefix = "/api/corral/v1/";
inline constexpr int64_t kFileMaxBytes = 100ll << 20;  // file read and write cap

struct CorralApiOptions {
  runtime::JailSpec base_spec;      // the daemon's config: what a request's spec overrides
  std::string base_dir;             // sandbox.base_dir: host mounts must lie below it
  int max_execs = 64;               // execs running at once
  int workers = 4;                  // threads for creates, removals, stats, files
  double reap_period_seconds = 10;  // how often sandboxes past their idle_timeout go
  // sandbox.resume_on_call: an exec, code or file call to a paused sandbox resumes it
  // first; off, such a call is a 409 failed_precondition.
  bool resume_on_call = true;
  // The daemon's I/O context: streamed exec output (server/corral_api/stream.h) is read
  // and written on it. nullptr: a streamed exec is refused (501).
  boost::asio::io_context* io = nullptr;
};

// The embedded server/corral_api/openapi.json.
std::string_view OpenApiDocument();

class CorralApi {
 public:
  explicit CorralApi(CorralApiOptions options);
  ~CorralApi();
  CorralApi(const CorralApi&) = delete;
  CorralApi& operator=(const CorralApi&) = delete;

  // `request.path` starts with kCorralApiPrefix. *route is set (before returning) to the
  // route template, for metrics and the access log: "/api/corral/v1/sandboxes/{name}/exec".
  void Handle(HttpRequest request, Reply reply, std::string* route);

  // Every (method, path template) served, from the route table: for the OpenAPI test.
  static std::vector<std::pair<std::string, std::string>> Routes();

  int execs_running() const { return gate_->running.load(); }

 private:
  // One call as a route's handler sees it: `name` is the {name} the route bound, already
  // checked (SandboxNameProblem, or a volume's name rule below volumes/); empty for routes
  // without one.
  struct Call {
    const std::string& name;
    HttpRequest request;
  };
  using Handler = void (*)(CorralApi& api, Call& call, Reply reply);
  // The routes below kCorralApiPrefix, declared once (routes.cc).
  static const RouteTable<Handler>& Table();

  // Shared with the exec threads, which may outlive this object.
  struct Gate {
    std::mutex mu;
    bool closed = false;  // set by ~CorralApi: replies are dropped from then on
    std::atomic<int> running{0};
  };

  void Create(const HttpRequest& request, Reply reply);
  void List(Reply reply);
  void Inspect(const std::string& name, Reply reply, bool stats_only);
  void Remove(const std::string& name, Reply reply);
  // POST .../pause and .../resume: the sandbox's state afterwards, as GET answers it.
  void SetPaused(const std::string& name, bool paused, Reply reply);
  void Exec(const std::string& name, const HttpRequest& request, Reply reply);
  // `"stream": true` or `Accept: text/event-stream`: server-sent events while it runs.
  void ExecStreamed(runtime::ExecRequest exec, Reply reply);
  // `corral code run --sandbox` over HTTP: under the daemon's python: policy.
  void Code(const std::string& name, const HttpRequest& request, Reply reply);
  // Runs `work` on a thread of its own (see above), at most max_execs at once.
  void OnExecThread(Reply reply, std::function<HttpResponse()> work);
  // Counts one more running exec; false (the 429 sent through `reply`) beyond max_execs.
  bool AdmitExec(const Reply& reply);
  void ReadFile(const std::string& name, const HttpRequest& request, Reply reply);
  void WriteFile(const std::string& name, HttpRequest request, Reply reply);
  void ListDir(const std::string& name, const HttpRequest& request, Reply reply);
  // The workspace overlay's review (workspace.cc): `corral diff`, `corral commit [--discard]`.
  void DiffWorkspace(const std::string& name, Reply reply);
  void CommitWorkspace(const std::string& name, const HttpRequest& request, Reply reply);
  // Snapshots and forks (snapshots.cc): `corral snapshot`, `snapshot ls/inspect/rm`, `fork`.
  void Snapshot(const std::string& name, const HttpRequest& request, Reply reply);
  void Fork(const std::string& name, const HttpRequest& request, Reply reply);
  void ListSnapshots(Reply reply);
  void InspectSnapshot(const std::string& tag, Reply reply);
  void RemoveSnapshot(const std::string& tag, Reply reply);
  // Named volumes (volumes.cc): `corral volume ls/create/inspect/rm` over HTTP.
  void ListVolumes(Reply reply);
  void CreateVolume(const HttpRequest& request, Reply reply);
  void InspectVolume(const std::string& name, Reply reply);
  void RemoveVolume(const std::string& name, const HttpRequest& request, Reply reply);
  // Posts `work` to the worker pool; its reply is dropped once this object is gone.
  void OnWorker(Reply reply, std::function<HttpResponse()> work);
  // The inits this process cloned become its zombies once removed (by us or `corral rm`).
  void ReapChildren();

  const CorralApiOptions options_;
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  std::mutex children_mu_;
  std::set<pid_t> children_;
  boost::asio::thread_pool workers_;
  std::mutex reaper_mu_;
  std::condition_variable_any reaper_cv_;
  std::jthread reaper_;  // last: stopped and joined first
};

}  // namespace corral::server
