// Placeholder body of the AIO API (server/aio_api.h) so that the daemon builds while the
// real one is written: answers GET v1/sandbox and 404 for everything else.
#include "server/aio_api.h"

namespace corral::server {

struct AioApi::Impl {
  AioApiOptions options;
};

AioApi::AioApi(AioApiOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}
AioApi::~AioApi() = default;

void AioApi::Handle(const AioSandboxRef& sandbox, std::string_view subpath, HttpRequest request,
                    Reply reply) {
  (void)request;
  if (subpath == "v1/sandbox") {
    reply(HttpResponse::Json(200, {{"home_dir", "/home/sandbox"},
                                   {"version", "corral"},
                                   {"sandbox_id", sandbox.sandbox_id}}));
    return;
  }
  reply(HttpResponse::Json(404, {{"detail", "Not Found"}}));
}

void AioApi::ForgetSandbox(const std::string& sandbox_id) { (void)sandbox_id; }
void AioApi::Shutdown(std::chrono::steady_clock::time_point deadline) { (void)deadline; }
size_t AioApi::live_sessions() const { return 0; }

}  // namespace corral::server
