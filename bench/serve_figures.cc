#include "bench/serve_figures.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "base/files.h"
#include "bench/launcher.h"
#include "bench/sandboxes.h"
#include "bench/stats.h"
#include "tools/providers/http_client.h"

namespace corral::bench {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Not a secret: the daemon listens on loopback for this run only.
constexpr char kKey[] = "corral-bench-key-0123456789abcdef";

std::optional<double> RssBytes(pid_t pid) {
  auto bytes = ReadKbField("/proc/" + std::to_string(pid) + "/status", "VmRSS:");
  if (!bytes) return std::nullopt;
  return static_cast<double>(*bytes);
}

// A `corral serve` of our own: temp dirs, loopback port 0, stopped and cleaned up on
// destruction (SIGTERM, then SIGKILL after 30 s; it also dies with us: PDEATHSIG).
class Daemon {
 public:
  ~Daemon() { Stop(); }

  Status Start(const std::string& corral_exe, int max_sandboxes) {
    char tmpl[] = "/tmp/corral-bench-serve-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return Error::FromErrno(errno, "mkdtemp");
    dir_ = tmpl;
    for (auto [sub, mode] : {std::pair{"/base", 0755}, {"/run", 0700}}) {
      if (::mkdir((dir_ + sub).c_str(), mode) != 0)
        return Error::FromErrno(errno, "mkdir " + dir_ + sub);
    }
    const std::string config = dir_ + "/corral.yaml";
    {
      std::ofstream out(config);
      out << "server: {listen: '127.0.0.1:0', api_key: " << kKey
          << ", access_log: 'off', max_sandboxes: " << max_sandboxes << "}\n"
          << "sandbox: {base_dir: " << dir_ << "/base, idle_timeout: 0, replicas: " << max_sandboxes
          << "}\n";
      if (!out.flush()) return Error::FromErrno(errno, "write " + config);
    }
    const std::string log = dir_ + "/serve.log";
    const std::string runtime = "CORRAL_RUNTIME_DIR=" + dir_ + "/run";
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) return Error::FromErrno(errno, "fork");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);
      int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int null = ::open("/dev/null", O_RDWR);
      if (out < 0 || null < 0) ::_exit(127);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(out, 2);
      ::putenv(const_cast<char*>(runtime.c_str()));
      const char* argv[] = {corral_exe.c_str(), "serve", "--config", config.c_str(), nullptr};
      ::execv(corral_exe.c_str(), const_cast<char* const*>(argv));
      ::_exit(127);
    }
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 400; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      std::smatch m;
      auto read = ReadFile(log);
      std::string text = read ? *read : "";
      if (std::regex_search(text, m, listening)) {
        base_url_ = "http://127.0.0.1:" + m[1].str();
        return Ok();
      }
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return Error(ErrorCode::kInternal, "corral serve exited: " + text);
      }
    }
    return Error(ErrorCode::kIo, "corral serve did not start listening within 10 s");
  }

  void Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status;
      bool gone = false;
      for (int i = 0; i < 300 && !gone; ++i) {
        gone = ::waitpid(pid_, &status, WNOHANG) == pid_;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!gone) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  Result<json> Call(const std::string& method, const std::string& url, const json& body) const {
    runtime::HttpCall call;
    call.method = method;
    call.url = url.rfind("http", 0) == 0 ? url : base_url_ + url;
    call.headers = {{"X-API-Key", kKey}, {"Content-Type", "application/json"}};
    if (!body.is_null()) call.body = body.dump();
    call.timeout_seconds = 60;
    ASSIGN_OR_RETURN(runtime::HttpReply reply, runtime::Perform(call));
    json parsed = json::parse(reply.body, nullptr, false);
    if (reply.status != 200) {
      return Error(ErrorCode::kInternal, method + " " + url + ": HTTP " +
                                             std::to_string(reply.status) + " " +
                                             reply.body.substr(0, 200));
    }
    if (parsed.is_discarded()) return Error(ErrorCode::kInternal, url + ": reply is not JSON");
    return parsed;
  }

  pid_t pid() const { return pid_; }

 private:
  std::string dir_;
  std::string base_url_;
  pid_t pid_ = -1;
};

// One shell/exec of `true`; the session id it ran in.
Result<std::string> ExecTrue(const Daemon& d, const std::string& sandbox_url,
                             const std::string& session) {
  json body = {{"command", "true"}};
  if (!session.empty()) body["id"] = session;
  ASSIGN_OR_RETURN(json reply, d.Call("POST", sandbox_url + "/v1/shell/exec", body));
  if (reply.value("success", false) != true || !reply["data"].is_object()) {
    return Error(ErrorCode::kInternal, "shell/exec failed: " + reply.dump().substr(0, 200));
  }
  return reply["data"].value("session_id", "");
}

}  // namespace

ServeFigures MeasureServe(const std::string& corral_exe, int count, int exec_rounds,
                          Progress& progress) {
  ServeFigures f;
  f.requested = count;
  Daemon daemon;
  progress.Update("serve: starting the daemon");
  if (Status s = daemon.Start(corral_exe, count + 10); !s) {
    f.status = EntryStatus::kFailed;
    f.reason = s.error().message();
    return f;
  }
  f.daemon_rss_start_bytes = RssBytes(daemon.pid());
  progress.Update("serve: settling memory");
  const auto mem_before = SettledMemAvailable();
  std::vector<std::string> urls;
  std::string error;
  const auto up0 = Clock::now();
  for (int i = 0; i < count && error.empty(); ++i) {
    progress.Update("serve: create + first exec " + std::to_string(i + 1) + "/" +
                    std::to_string(count));
    const std::string id = "bench-" + std::to_string(i);
    const auto t0 = Clock::now();
    auto created =
        daemon.Call("POST", "/api/sandboxes", json{{"sandbox_id", id}, {"thread_id", "t-" + id}});
    if (!created) {
      error = created.error().message();
      break;
    }
    urls.push_back((*created).value("sandbox_url", ""));
    auto first = ExecTrue(daemon, urls.back(), "");
    if (!first) {
      error = first.error().message();
      break;
    }
    f.create_to_exec_ms.push_back(MsSince(t0));
  }
  f.bring_up_s = MsSince(up0) / 1000.0;
  f.created = static_cast<int>(urls.size());
  if (f.created > 0) {
    progress.Update("serve: measuring idle memory");
    const auto mem_after = SettledMemAvailable();
    f.daemon_rss_idle_bytes = RssBytes(daemon.pid());
    if (mem_before && mem_after) {
      f.mem_available_per_sandbox_bytes = static_cast<double>(*mem_before - *mem_after) / f.created;
    }
  }
  if (error.empty() && !urls.empty()) {
    // One live session first: fresh-session calls make new sessions, and the daemon keeps
    // only so many per sandbox (the oldest go), which would end this one.
    progress.Update("serve: shell/exec round trips, one session");
    auto opened = ExecTrue(daemon, urls.front(), "");
    if (!opened) error = opened.error().message();
    const std::string session = opened ? *opened : "";
    for (int i = 0; i < exec_rounds && error.empty() && !session.empty(); ++i) {
      const auto t0 = Clock::now();
      auto same = ExecTrue(daemon, urls.front(), session);
      if (!same) error = same.error().message();
      if (same) f.exec_session_ms.push_back(MsSince(t0));
    }
    progress.Update("serve: shell/exec round trips, fresh sessions");
    for (int i = 0; i < exec_rounds && error.empty(); ++i) {
      const auto t0 = Clock::now();
      auto fresh = ExecTrue(daemon, urls.front(), "");
      if (!fresh) error = fresh.error().message();
      if (fresh) f.exec_fresh_ms.push_back(MsSince(t0));
    }
    progress.Update("serve: shell/exec round trips, fresh sessions, paused");
    for (int i = 0; i < exec_rounds && error.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kServePauseMs));
      const auto t0 = Clock::now();
      auto fresh = ExecTrue(daemon, urls.front(), "");
      if (!fresh) error = fresh.error().message();
      if (fresh) f.exec_fresh_paused_ms.push_back(MsSince(t0));
    }
  }
  progress.Update("serve: removing");
  for (size_t i = 0; i < urls.size(); ++i) {
    auto gone = daemon.Call("DELETE", "/api/sandboxes/bench-" + std::to_string(i), nullptr);
    if (!gone && error.empty()) error = "delete: " + gone.error().message();
  }
  daemon.Stop();
  f.status = f.created > 0 ? EntryStatus::kOk : EntryStatus::kFailed;
  f.reason = error;
  return f;
}

}  // namespace corral::bench
