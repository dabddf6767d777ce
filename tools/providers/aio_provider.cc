// AioSandboxProvider (tools/providers/aio_sandbox.h): one AIO sandbox per thread, made
// through a provisioner, or the one server at sandbox.aio_url.
#include <cstdio>
#include <thread>

#include "base/fnv1a.h"
#include "base/json_input.h"
#include "tools/providers/aio_sandbox.h"
#include "tools/providers/http_client.h"

namespace corral::runtime {

namespace {

using nlohmann::json;

// How long a new sandbox may take to answer GET v1/sandbox (DeerFlow waits 60 s).
constexpr double kReadySeconds = 60;

std::string Trim(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

bool Ready(const std::string& sandbox_url) {
  HttpCall call;
  call.url = Trim(sandbox_url) + "/v1/sandbox";
  call.timeout_seconds = 5;
  auto reply = Perform(call);
  return reply && reply->status == 200;
}

}  // namespace

// The soft cap is sandbox.replicas, as for the jail provider: beyond it the least recently
// used released sandbox is deleted on the server.
AioSandboxProvider::AioSandboxProvider(ProviderConfig config)
    : ProviderBase(config, static_cast<size_t>(config.replicas)) {}

std::string AioSandboxProvider::IdFor(const ThreadDirs& dirs) const {
  // Stable per (user, thread) and within the provisioner's id syntax [A-Za-z0-9_-]{1,64}.
  std::string key = dirs.user_id + ":" + dirs.thread_id;
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Fnv1a(key)));
  return std::string("aio-") + hex;
}

Result<std::string> AioSandboxProvider::Provision(const ThreadDirs& dirs, const std::string& id) {
  const std::string& base = config_.provisioner_url;
  HttpCall call;
  call.method = "POST";
  call.url = Trim(base) + "/api/sandboxes";
  call.headers = {{"Content-Type", "application/json"}};
  if (!config_.provisioner_api_key.empty()) {
    call.headers.emplace_back("X-API-Key", config_.provisioner_api_key);
  }
  call.body =
      json({{"sandbox_id", id}, {"thread_id", dirs.thread_id}, {"user_id", dirs.user_id}}).dump();
  ASSIGN_OR_RETURN(HttpReply reply, Perform(call));
  json body = ParseJsonInputOrDiscarded(reply.body);
  if (reply.status != 200 || !body.is_object() || !body.contains("sandbox_url") ||
      !body["sandbox_url"].is_string()) {
    std::string why = body.is_object() && body.contains("detail") ? body["detail"].dump()
                                                                  : reply.body.substr(0, 200);
    return Error(ErrorCode::kIo,
                 "provisioner create failed: HTTP " + std::to_string(reply.status) + ": " + why);
  }
  return body["sandbox_url"].get<std::string>();
}

Result<std::shared_ptr<Sandbox>> AioSandboxProvider::Create(const ThreadDirs& dirs) {
  const std::string id = IdFor(dirs);
  std::string url = config_.aio_url;
  if (!config_.provisioner_url.empty()) {
    ASSIGN_OR_RETURN(url, Provision(dirs, id));
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kReadySeconds);
  while (!Ready(url)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error(ErrorCode::kIo, "sandbox " + id + " did not answer GET v1/sandbox within " +
                                       std::to_string(static_cast<int>(kReadySeconds)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return std::shared_ptr<Sandbox>(std::make_shared<AioSandbox>(id, url));
}

bool AioSandboxProvider::Alive(Sandbox& sandbox) {
  if (config_.provisioner_url.empty()) return Ready(static_cast<AioSandbox&>(sandbox).base_url());
  HttpCall call;
  call.url = Trim(config_.provisioner_url) + "/api/sandboxes/" + UrlEscape(sandbox.id());
  call.timeout_seconds = 10;
  if (!config_.provisioner_api_key.empty()) {
    call.headers.emplace_back("X-API-Key", config_.provisioner_api_key);
  }
  auto reply = Perform(call);
  // As DeerFlow's remote backend: gone only on a clear 404; an unknown state keeps it.
  if (!reply) return true;
  if (reply->status == 404) return false;
  json body = ParseJsonInputOrDiscarded(reply->body);
  return !(body.is_object() && body.contains("status") && body["status"] != "Running");
}

void AioSandboxProvider::Destroy(Sandbox& sandbox) {
  if (config_.provisioner_url.empty()) return;  // the shared server is not ours to end
  HttpCall call;
  call.method = "DELETE";
  call.url = Trim(config_.provisioner_url) + "/api/sandboxes/" + UrlEscape(sandbox.id());
  call.timeout_seconds = 15;
  if (!config_.provisioner_api_key.empty()) {
    call.headers.emplace_back("X-API-Key", config_.provisioner_api_key);
  }
  (void)Perform(call);  // idempotent on the server; a failure leaves it to its reaper
}

}  // namespace corral::runtime
