// The state every part of corral-netproxy shares: the policy, the decisions log and the
// counters, the jail's namespace (for new listeners), the capture addresses and the
// connection limits. One per process, created by RunProxy (proxy.h); the process ends
// with _exit while it still exists (proxy.h says why). Used on the single I/O thread
// only: no locks.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "runtime/net/policy.h"
#include "runtime/netproxy/proxy_capture.h"
#include "runtime/netproxy/proxy_log.h"
#include "runtime/netproxy/proxy_netns.h"
#include "runtime/netproxy/proxy_summary.h"

namespace corral::runtime::net {

// Client connections still in their handshake (request head, SOCKS greeting, DNS over
// TCP) at once; more are closed at accept. Proxied connections are bounded separately by
// Policy::max_connections().
inline constexpr int kMaxPendingClients = 128;

class ConnectionRecord;

struct ProxyContext {
  ProxyContext(std::string sandbox_name, Policy p, DecisionLog l, JailNetns n)
      : sandbox(std::move(sandbox_name)),
        policy(std::move(p)),
        log(std::move(l)),
        netns(std::move(n)) {}

  // Logs and counts a decision.
  void Record(const Decision& decision) {
    log.Record(decision);
    stats.Count(decision);
  }
  bool ByteLimitReached() const {
    return policy.max_bytes() && stats.total_bytes() >= static_cast<uint64_t>(*policy.max_bytes());
  }

  std::string sandbox;
  Policy policy;
  DecisionLog log;
  ProxyStats stats;
  JailNetns netns;
  CaptureTable captures;
  boost::asio::io_context* io = nullptr;  // set while RunProxy's io_context exists
  int64_t open_connections = 0;           // proxied connections (from their slot to their end)
  std::set<ConnectionRecord*> live;       // the same connections, for the close events at exit
  int pending_clients = 0;
};

// A client connection in its handshake, counted in pending_clients while it lives.
class PendingClient {
 public:
  explicit PendingClient(ProxyContext& ctx) : ctx_(&ctx) { ++ctx_->pending_clients; }
  ~PendingClient() { --ctx_->pending_clients; }
  PendingClient(const PendingClient&) = delete;
  PendingClient& operator=(const PendingClient&) = delete;

 private:
  ProxyContext* ctx_;
};

// One proxied connection from the moment it takes a slot of max_connections (before its
// name is resolved) to its end. Counts its bytes (into the totals as they pass, for the
// byte cap) and, once connected, logs the close event on destruction.
class ConnectionRecord {
 public:
  ConnectionRecord(ProxyContext& ctx, std::string via, std::string host, uint16_t port);
  ~ConnectionRecord() { End("", false); }
  ConnectionRecord(const ConnectionRecord&) = delete;
  ConnectionRecord& operator=(const ConnectionRecord&) = delete;

  ProxyContext& ctx() { return *ctx_; }
  const std::string& via() const { return end_.via; }
  const std::string& host() const { return end_.host; }
  uint16_t port() const { return end_.port; }
  void MarkConnected(std::string address) {
    end_.address = std::move(address);
    connected_ = true;
  }
  // The first reason the proxy gives for cutting the connection is kept.
  void set_end_reason(std::string reason) {
    if (end_.reason.empty()) end_.reason = std::move(reason);
  }
  void AddOut(uint64_t n) {
    end_.bytes_out += n;
    ctx_->stats.AddBytes(n, 0);
  }
  void AddIn(uint64_t n) {
    end_.bytes_in += n;
    ctx_->stats.AddBytes(0, n);
  }
  // Logs the close event (once; if connected) with `reason` and gives the slot back.
  // `at_exit`: the process is ending, this connection with it.
  void End(const std::string& reason, bool at_exit);

 private:
  ProxyContext* ctx_;
  ConnectionEnd end_;
  bool connected_ = false;
  bool ended_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace corral::runtime::net
