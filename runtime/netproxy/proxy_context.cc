#include "runtime/netproxy/proxy_context.h"

namespace corral::runtime::net {

ConnectionRecord::ConnectionRecord(ProxyContext& ctx, std::string via, std::string host,
                                   uint16_t port)
    : ctx_(&ctx), start_(std::chrono::steady_clock::now()) {
  end_.via = std::move(via);
  end_.host = std::move(host);
  end_.port = port;
  ++ctx_->open_connections;
  ctx_->live.insert(this);
}

void ConnectionRecord::End(const std::string& reason, bool at_exit) {
  if (ended_) return;
  ended_ = true;
  --ctx_->open_connections;
  ctx_->live.erase(this);
  if (!connected_) return;
  if (!reason.empty()) set_end_reason(reason);
  if (at_exit) set_end_reason("proxy exit");
  end_.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start_)
                         .count();
  ctx_->log.Record(end_);
}

}  // namespace corral::runtime::net
