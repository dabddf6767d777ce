#include "server/corral_api/api.h"

#include <sys/wait.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <thread>

#include "runtime/code/code_run.h"
#include "runtime/run/outcome.h"
#include "runtime/run/planner.h"
#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec_json.h"
#include "runtime/volumes/volume_attach.h"
#include "server/corral_api/internal.h"
#include "server/corral_api/request.h"
#include "server/corral_api/stream.h"

namespace corral::server {

namespace {

// sandbox.resume_on_call: a paused sandbox is resumed before a call uses it; off, the call
// goes on and the runtime refuses it (409 failed_precondition).
Status ResumeForCall(bool resume_on_call, const std::string& name) {
  return resume_on_call ? runtime::ResumeIfPaused(name) : Ok();
}

using nlohmann::json;

// `corral inspect`: the ps/stats fields plus the whole spec.
json InspectJson(const runtime::SandboxInfo& info) {
  json spec = json::parse(runtime::SpecToJson(info.record.spec));
  json j = SandboxInfoJson(info);
  j["created_at"] = info.record.created_at;
  j["cgroup"] = info.record.cgroup_name;
  j["limits"] = spec["limits"];
  j["mounts"] = spec["mounts"];
  j["spec"] = spec;
  return j;
}

}  // namespace

CorralApi::CorralApi(CorralApiOptions options)
    : options_(std::move(options)), workers_(static_cast<size_t>(options_.workers)) {
  reaper_ = std::jthread([this](std::stop_token stop) {
    const auto period = std::chrono::duration<double>(options_.reap_period_seconds);
    std::unique_lock<std::mutex> lock(reaper_mu_);
    while (!reaper_cv_.wait_for(lock, stop, period, [] { return false; })) {
      if (stop.stop_requested()) break;
      lock.unlock();
      (void)runtime::ReapIdleSandboxes();
      ReapChildren();
      lock.lock();
    }
  });
}

CorralApi::~CorralApi() {
  reaper_.request_stop();
  if (reaper_.joinable()) reaper_.join();
  {
    std::lock_guard<std::mutex> lock(gate_->mu);
    gate_->closed = true;
  }
  workers_.join();
}

void CorralApi::OnWorker(Reply reply, std::function<HttpResponse()> work) {
  boost::asio::post(workers_,
                    [this, gate = gate_, reply = std::move(reply), work = std::move(work)] {
                      ReapChildren();
                      HttpResponse response = work();
                      std::lock_guard<std::mutex> lock(gate->mu);
                      if (!gate->closed) reply(std::move(response));
                    });
}

void CorralApi::ReapChildren() {
  std::lock_guard<std::mutex> lock(children_mu_);
  for (auto it = children_.begin(); it != children_.end();) {
    int status;
    pid_t r = ::waitpid(*it, &status, WNOHANG);
    it = (r == *it || (r < 0 && errno == ECHILD)) ? children_.erase(it) : std::next(it);
  }
}

void CorralApi::Create(const HttpRequest& request, Reply reply) {
  auto parsed = ParseSandboxCreate(request.body, options_.base_spec, options_.base_dir);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply(error->ToResponse());
  OnWorker(std::move(reply), [this, create = std::get<SandboxCreate>(std::move(parsed))] {
    runtime::CreateRequest r;
    r.spec = create.spec;
    r.name = create.name;
    r.idle_timeout_seconds = create.idle_timeout_seconds;
    r.from_snapshot = create.from_snapshot;
    // Volumes must exist (POST /volumes): a typo is a 404, not a new empty volume.
    auto record = runtime::CreateSandboxWithVolumes(r, /*create_missing=*/false);
    if (!record) return RuntimeError(record.error(), "spec");
    {
      std::lock_guard<std::mutex> lock(children_mu_);
      children_.insert(record->init_pid);
    }
    auto info = runtime::InspectSandbox(record->name);
    if (!info) return RuntimeError(info.error(), "name");
    json created = InspectJson(*info);
    // What `corral create` warns about on its terminal, for a caller that has none.
    std::vector<std::string> warnings = runtime::SandboxWarnings(record->spec);
    if (!warnings.empty()) created["warnings"] = std::move(warnings);
    return HttpResponse::Json(201, created);
  });
}

void CorralApi::List(Reply reply) {
  OnWorker(std::move(reply), [] {
    json list = json::array();
    for (const auto& info : runtime::ListSandboxes()) list.push_back(SandboxInfoJson(info));
    const size_t count = list.size();
    return HttpResponse::Json(200, {{"sandboxes", std::move(list)}, {"count", count}});
  });
}

void CorralApi::Inspect(const std::string& name, Reply reply, bool stats_only) {
  OnWorker(std::move(reply), [name, stats_only] {
    auto info = runtime::InspectSandbox(name);
    if (!info) return RuntimeError(info.error(), "name");
    return HttpResponse::Json(200, stats_only ? SandboxInfoJson(*info) : InspectJson(*info));
  });
}

void CorralApi::Remove(const std::string& name, Reply reply) {
  OnWorker(std::move(reply), [this, name] {
    Status st = runtime::RemoveSandbox(name);
    ReapChildren();
    if (!st) return RuntimeError(st.error(), "name");
    return HttpResponse::Json(200, {{"name", name}, {"removed", true}});
  });
}

void CorralApi::SetPaused(const std::string& name, bool paused, Reply reply) {
  OnWorker(std::move(reply), [name, paused] {
    Status st = paused ? runtime::PauseSandbox(name) : runtime::ResumeSandbox(name);
    if (!st) return RuntimeError(st.error(), "name");
    auto info = runtime::InspectSandbox(name);
    if (!info) return RuntimeError(info.error(), "name");
    return HttpResponse::Json(200, SandboxInfoJson(*info));
  });
}

void CorralApi::Exec(const std::string& name, const HttpRequest& request, Reply reply) {
  // The body's "stream" (when given) wins over the Accept header.
  const std::string* accept = request.Header("accept");
  bool stream = accept && accept->find("text/event-stream") != std::string::npos;
  auto parsed = ParseExecRequest(request.body, name, &stream);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply(error->ToResponse());
  if (stream)
    return ExecStreamed(std::get<runtime::ExecRequest>(std::move(parsed)), std::move(reply));
  // Captures no `this`: an exec's thread may outlive the API (see OnExecThread).
  OnExecThread(std::move(reply), [resume = options_.resume_on_call,
                                  exec = std::get<runtime::ExecRequest>(std::move(parsed))] {
    if (Status st = ResumeForCall(resume, exec.sandbox); !st) {
      return RuntimeError(st.error(), "name");
    }
    HttpResponse response;
    auto outcome = runtime::ExecInSandbox(exec);
    if (!outcome) {
      response = RuntimeError(outcome.error(), "");
    } else {
      response.body = runtime::OutcomeToJson(*outcome);
    }
    return response;
  });
}

void CorralApi::ExecStreamed(runtime::ExecRequest exec, Reply reply) {
  if (!options_.io) {
    return reply(ApiError{
        501, "not_implemented", "streamed exec needs the daemon's I/O context", "stream", {}}
                     .ToResponse());
  }
  if (!AdmitExec(reply)) return;
  auto release = [gate = gate_] { gate->running.fetch_sub(1); };
  // Looked up first, so that an unknown sandbox is a 404 rather than an error event, and
  // for the sandbox's own output cap when the request gives none.
  OnWorker(std::move(reply), [this, exec = std::move(exec), release]() mutable {
    if (Status st = ResumeForCall(options_.resume_on_call, exec.sandbox); !st) {
      release();
      return RuntimeError(st.error(), "name");
    }
    auto info = runtime::InspectSandbox(exec.sandbox);
    if (!info || !info->alive) {
      release();
      return RuntimeError(
          info ? Error(ErrorCode::kNotFound, "sandbox " + exec.sandbox + " is dead") : info.error(),
          "name");
    }
    const int64_t cap =
        exec.output_limit_bytes.value_or(info->record.spec.limits.output_limit_bytes);
    ExecThread exec_thread = [gate = gate_](std::function<std::function<void()>()> blocking) {
      // A thread per exec that ends after it, as OnExecThread's (see the header).
      std::thread([gate, blocking = std::move(blocking)]() mutable {
        std::function<void()> then = blocking();
        std::lock_guard<std::mutex> lock(gate->mu);
        if (!gate->closed) return then();
        // The API (and soon the io_context the stream's Asio objects belong to) is gone:
        // destroying them now could touch a dead io_context, so they are left to the
        // process's exit, which is under way.
        (void)new std::function<void()>(std::move(then));
        (void)new std::function<std::function<void()>()>(std::move(blocking));
      }).detach();
    };
    return StreamExec(*options_.io, std::move(exec), cap, std::move(exec_thread), release);
  });
}

void CorralApi::Code(const std::string& name, const HttpRequest& request, Reply reply) {
  auto parsed = ParseCodeRequest(request.body, name, options_.base_spec.python);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply(error->ToResponse());
  OnExecThread(std::move(reply), [resume = options_.resume_on_call, spec = options_.base_spec,
                                  code = std::get<runtime::code::CodeRequest>(std::move(parsed))] {
    if (!code.sandbox.empty()) {
      if (Status st = ResumeForCall(resume, code.sandbox); !st) {
        return RuntimeError(st.error(), "name");
      }
    }
    HttpResponse response;
    auto result = runtime::code::RunCode(spec, code);
    if (!result) {
      response = RuntimeError(result.error(), "");
    } else {
      response.body = runtime::code::CodeResultToJson(*result);
    }
    return response;
  });
}

bool CorralApi::AdmitExec(const Reply& reply) {
  if (gate_->running.fetch_add(1) < options_.max_execs) return true;
  gate_->running.fetch_sub(1);
  HttpResponse busy = ApiError{
      429,
      "too_many_execs",
      "more than " + std::to_string(options_.max_execs) + " execs are running; retry later",
      "",
      {}}.ToResponse();
  busy.headers.emplace_back("Retry-After", "1");
  reply(std::move(busy));
  return false;
}

void CorralApi::OnExecThread(Reply reply, std::function<HttpResponse()> work) {
  if (!AdmitExec(reply)) return;
  // A thread per exec that ends after it (see the header): never a pool thread that might
  // end while a jail it cloned still runs, never a thread of the server's.
  std::thread([gate = gate_, reply = std::move(reply), work = std::move(work)] {
    HttpResponse response = work();
    {
      std::lock_guard<std::mutex> lock(gate->mu);
      if (!gate->closed) reply(std::move(response));
    }
    gate->running.fetch_sub(1);
  }).detach();
}

}  // namespace corral::server
