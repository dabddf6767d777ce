// corral's own API: file operations (through JailSandbox's safe resolution: inside the
// sandbox's root, as its user; no path logic here), and the JSON and error helpers.
#include <boost/asio/post.hpp>

#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/sandbox_info_json.h"
#include "server/corral_api/api.h"
#include "server/corral_api/internal.h"
#include "server/corral_api/request.h"
#include "tools/providers/jail_sandbox.h"

namespace corral::server {
namespace {

using nlohmann::json;

HttpResponse Err(int status, const std::string& code, const std::string& message,
                 const std::string& field) {
  return ApiError{status, code, message, field, {}}.ToResponse();
}

// The `path` query parameter, or the 422 that says it is missing.
const std::string* PathParam(const HttpRequest& request, HttpResponse* missing) {
  const std::string* path = request.Query("path");
  if (path == nullptr || path->empty()) {
    *missing = Err(422, "invalid_field", "path: the query parameter ?path= is required", "path");
  }
  return path;
}

// The sandbox `name` held for the length of one file operation; resumed first when it is
// paused and `resume` (server.resume_on_call) is on, else a paused one is a 409.
std::variant<std::unique_ptr<runtime::JailSandbox>, HttpResponse> Held(const std::string& name,
                                                                       bool resume) {
  if (resume) {
    if (Status st = runtime::ResumeIfPaused(name); !st) return RuntimeError(st.error(), "name");
  }
  auto hold = runtime::HoldSandbox(name);
  if (!hold) return RuntimeError(hold.error(), "name");
  return std::make_unique<runtime::JailSandbox>(std::move(*hold));
}

}  // namespace

json SandboxInfoJson(const runtime::SandboxInfo& info) { return runtime::SandboxInfoJson(info); }

HttpResponse RuntimeError(const Error& error, const std::string& field) {
  const std::string& m = error.message();
  switch (error.code()) {
    case ErrorCode::kNotFound:
      return Err(404, "not_found", m, field == "spec" ? "" : field);
    case ErrorCode::kAlreadyExists:
      return Err(409, "already_exists", m, field == "spec" ? "name" : field);
    case ErrorCode::kFailedPrecondition:  // a paused sandbox, as Docker answers an exec into one
      return Err(409, "failed_precondition", m, field);
    case ErrorCode::kInvalidArgument:
      return Err(422, "invalid_argument", m, field);
    case ErrorCode::kPermissionDenied:
      return Err(403, "permission_denied", m, field);
    default:
      return Err(500, "internal", m, "");
  }
}

HttpResponse FileError(const runtime::SandboxError& e) {
  using runtime::SandboxErrc;
  const std::string code = runtime::SandboxErrcName(e.code);
  switch (e.code) {
    case SandboxErrc::kNotFound:
    case SandboxErrc::kUnavailable:
      return Err(404, code, e.message, "path");
    case SandboxErrc::kPathEscape:
    case SandboxErrc::kPermissionDenied:
    case SandboxErrc::kReadOnly:
      return Err(403, code, e.message, "path");
    case SandboxErrc::kTooLarge:
      return Err(413, code, e.message, "path");
    case SandboxErrc::kIsDirectory:
    case SandboxErrc::kNotDirectory:
    case SandboxErrc::kInvalidArgument:
    case SandboxErrc::kBinary:
    case SandboxErrc::kInvalidRegex:
      return Err(422, code, e.message, "path");
    default:
      return Err(500, code, e.message, "path");
  }
}

void CorralApi::ReadFile(const std::string& name, const HttpRequest& request, Reply reply) {
  HttpResponse missing;
  const std::string* path = PathParam(request, &missing);
  if (path == nullptr || path->empty()) return reply(std::move(missing));
  OnWorker(std::move(reply), [name, path = *path, resume = options_.resume_on_call] {
    auto held = Held(name, resume);
    if (auto* r = std::get_if<HttpResponse>(&held)) return std::move(*r);
    auto bytes = std::get<0>(held)->ReadBytes(path, kFileMaxBytes);
    if (!bytes) return FileError(bytes.error());
    HttpResponse r;
    r.content_type = "application/octet-stream";
    r.body = std::move(*bytes);
    return r;
  });
}

void CorralApi::WriteFile(const std::string& name, HttpRequest request, Reply reply) {
  HttpResponse missing;
  const std::string* path = PathParam(request, &missing);
  if (path == nullptr || path->empty()) return reply(std::move(missing));
  if (static_cast<int64_t>(request.body.size()) > kFileMaxBytes) {
    return reply(Err(413, "too_large", "body: a file may hold at most 100 MiB", "body"));
  }
  OnWorker(std::move(reply),
           [name, path = *path, body = std::move(request.body), resume = options_.resume_on_call] {
             auto held = Held(name, resume);
             if (auto* r = std::get_if<HttpResponse>(&held)) return std::move(*r);
             // UpdateFile: binary create/overwrite, parent directories created.
             if (auto st = std::get<0>(held)->UpdateFile(path, body); !st)
               return FileError(st.error());
             return HttpResponse::Json(200, {{"path", path}, {"bytes", body.size()}});
           });
}

void CorralApi::ListDir(const std::string& name, const HttpRequest& request, Reply reply) {
  HttpResponse missing;
  const std::string* path = PathParam(request, &missing);
  if (path == nullptr || path->empty()) return reply(std::move(missing));
  int depth = 1;
  if (const std::string* d = request.Query("depth")) {
    if (d->size() != 1 || (*d)[0] < '1' || (*d)[0] > '9') {
      return reply(Err(422, "invalid_field", "depth: expected 1 to 9", "depth"));
    }
    depth = (*d)[0] - '0';
  }
  OnWorker(std::move(reply), [name, path = *path, depth, resume = options_.resume_on_call] {
    auto held = Held(name, resume);
    if (auto* r = std::get_if<HttpResponse>(&held)) return std::move(*r);
    auto entries = std::get<0>(held)->ListEntries(path, depth);
    if (!entries) return FileError(entries.error());
    json list = json::array();
    for (const auto& e : *entries) {
      list.push_back({{"path", e.path},
                      {"type", e.is_symlink ? "symlink"
                               : e.is_dir   ? "directory"
                                            : "file"},
                      {"size", e.size},
                      {"mtime", e.mtime},
                      {"mode", e.mode}});
    }
    return HttpResponse::Json(200, {{"path", path}, {"entries", std::move(list)}});
  });
}

}  // namespace corral::server
