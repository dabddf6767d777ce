#include "runtime/netproxy/proxy_relay.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <span>

#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_listen.h"
#include "runtime/netproxy/proxy_sni.h"

namespace corral::runtime::net {

namespace asio = boost::asio;
using asio::ip::tcp;
using std::chrono::steady_clock;

namespace {

// Both sockets and the bookkeeping of one relayed connection, shared by its two pumps and
// its idle watchdog; the last of them to finish destroys it (and the record logs the end).
struct RelayState {
  RelayState(tcp::socket c, tcp::socket u, std::shared_ptr<ConnectionRecord> r)
      : client(std::move(c)),
        upstream(std::move(u)),
        record(std::move(r)),
        idle(client.get_executor()) {}

  void Touch() { last_activity = steady_clock::now(); }
  // Ends both directions now; `reason` (if any) is logged with the close event.
  void Cut(const std::string& reason) {
    if (!reason.empty()) record->set_end_reason(reason);
    boost::system::error_code ignored;
    client.close(ignored);
    upstream.close(ignored);
  }
  // A pump is done; after the second one the watchdog stops too.
  void PumpDone() {
    if (--running > 0) return;
    Cut("");
    idle.cancel();
  }
  // How many of `n` more bytes the byte cap lets through (all, without a cap).
  size_t UnderByteCap(size_t n) const {
    const auto cap = record->ctx().policy.max_bytes();
    if (!cap) return n;
    const uint64_t used = record->ctx().stats.total_bytes();
    const uint64_t left =
        used >= static_cast<uint64_t>(*cap) ? 0 : static_cast<uint64_t>(*cap) - used;
    return static_cast<size_t>(std::min<uint64_t>(n, left));
  }

  tcp::socket client;
  tcp::socket upstream;
  std::shared_ptr<ConnectionRecord> record;
  asio::steady_timer idle;
  steady_clock::time_point last_activity = steady_clock::now();
  int running = 2;
};

enum class Direction { kToUpstream, kToClient };

// Writes `data` to the destination of `direction`, counting it; false if the connection
// ended (error, byte cap: what fits under the cap is passed on, then both ends close, and
// the cap, now reached, refuses new connections).
asio::awaitable<bool> Forward(std::shared_ptr<RelayState> s, Direction direction,
                              std::span<const uint8_t> data) {
  if (data.empty()) co_return true;
  const size_t allowed = s->UnderByteCap(data.size());
  // Counted before the write: the other connections' writes meanwhile see them taken.
  if (direction == Direction::kToUpstream) {
    s->record->AddOut(allowed);
  } else {
    s->record->AddIn(allowed);
  }
  tcp::socket& to = direction == Direction::kToUpstream ? s->upstream : s->client;
  boost::system::error_code ec;
  co_await asio::async_write(to, asio::buffer(data.data(), allowed),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    s->Cut("");
    co_return false;
  }
  s->Touch();
  if (allowed < data.size()) {
    s->Cut("byte limit");
    co_return false;
  }
  co_return true;
}

// Moves bytes until the source ends (passed on as a half close) or anything fails.
asio::awaitable<void> Pump(std::shared_ptr<RelayState> s, Direction direction, std::string prefix) {
  tcp::socket& from = direction == Direction::kToUpstream ? s->client : s->upstream;
  tcp::socket& to = direction == Direction::kToUpstream ? s->upstream : s->client;
  bool open = co_await Forward(
      s, direction, std::span(reinterpret_cast<const uint8_t*>(prefix.data()), prefix.size()));
  std::vector<uint8_t> buffer(kRelayBufferBytes);
  while (open) {
    boost::system::error_code ec;
    const size_t n = co_await from.async_read_some(asio::buffer(buffer),
                                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::eof) {
      to.shutdown(tcp::socket::shutdown_send, ec);
      break;
    }
    if (ec) {
      s->Cut("");
      break;
    }
    s->Touch();
    open = co_await Forward(s, direction, std::span(buffer.data(), n));
  }
  s->PumpDone();
}

std::string SniDenial(const SniResult& sni, const RelaySettings& settings) {
  if (sni.status == SniResult::Status::kMalformed) return "malformed TLS ClientHello";
  if (sni.status == SniResult::Status::kFound && sni.name != settings.sni_name) {
    return "SNI " + sni.name + " does not match " + settings.tunnel_kind + " " + settings.sni_name;
  }
  return "";
}

// Client -> upstream with the server name check first: collects the client's first bytes
// until they are known not to be a ClientHello, or are one (then the name must match).
asio::awaitable<void> PumpCheckingSni(std::shared_ptr<RelayState> s, RelaySettings settings) {
  std::string first = std::move(settings.upstream_prefix);
  std::vector<uint8_t> buffer(4096);
  for (;;) {
    const SniResult sni =
        ExtractSni(std::span(reinterpret_cast<const uint8_t*>(first.data()), first.size()));
    if (sni.status != SniResult::Status::kNeedMore) {
      if (std::string why = SniDenial(sni, settings); !why.empty()) {
        ConnectionRecord& r = *s->record;
        Decision denial{r.via(), r.host(), r.port(), false, why, ""};
        r.ctx().log.Record(denial);
        r.ctx().stats.CountLateDenial(denial);
        s->Cut(why);
        s->PumpDone();
        co_return;
      }
      break;
    }
    boost::system::error_code ec;
    const size_t n = co_await s->client.async_read_some(
        asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;  // the plain pump below forwards what came and handles the end
    s->Touch();
    first.append(reinterpret_cast<const char*>(buffer.data()), n);
  }
  co_await Pump(s, Direction::kToUpstream, std::move(first));
}

asio::awaitable<void> Watchdog(std::shared_ptr<RelayState> s) {
  for (;;) {
    s->idle.expires_at(s->last_activity + kRelayIdleTimeout);
    boost::system::error_code ec;
    co_await s->idle.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (s->running == 0) co_return;
    if (steady_clock::now() >= s->last_activity + kRelayIdleTimeout) {
      s->Cut("idle timeout");
      co_return;
    }
  }
}

}  // namespace

void StartRelay(tcp::socket client, tcp::socket upstream, std::shared_ptr<ConnectionRecord> record,
                RelaySettings settings) {
  boost::system::error_code ignored;
  // Small writes (interactive protocols) pass at once; the relay never coalesces them.
  client.set_option(tcp::no_delay(true), ignored);
  upstream.set_option(tcp::no_delay(true), ignored);
  auto state =
      std::make_shared<RelayState>(std::move(client), std::move(upstream), std::move(record));
  const asio::any_io_executor executor = state->client.get_executor();
  if (settings.sni_name.empty()) {
    Spawn(executor, Pump(state, Direction::kToUpstream, std::move(settings.upstream_prefix)),
          "relay");
  } else {
    Spawn(executor, PumpCheckingSni(state, std::move(settings)), "relay");
  }
  Spawn(executor, Pump(state, Direction::kToClient, ""), "relay");
  Spawn(executor, Watchdog(state), "relay watchdog");
}

}  // namespace corral::runtime::net
