#include "server/daemon.h"

#include <malloc.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "runtime/net/netproxy_launch.h"
#include "runtime/pool/exec_slot_keeper.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/remove_many.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/server_config.h"
#include "server/aio/api.h"
#include "server/corral_api/api.h"
#include "server/http/access_log.h"
#include "server/http/auth.h"
#include "server/http/metrics.h"
#include "server/http/sd_notify.h"
#include "server/http/server.h"
#include "server/provisioner/sandbox_manager.h"
#include "server/router.h"

namespace corral::server {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

int Fail(const std::string& message) {
  std::fprintf(stderr, "corral serve: %s\n", message.c_str());
  return 125;
}

// The daemon logs from several threads: the CLI's logger is single-threaded.
void UseThreadSafeLogger() {
  const auto level = spdlog::get_level();
  auto logger = spdlog::stderr_color_mt("corral-serve");
  logger->set_pattern("corral serve: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(std::getenv("SPDLOG_LEVEL") ? level : spdlog::level::info);
}

struct Loaded {
  runtime::ServerConfig server;
  runtime::ProviderConfig provider;
  runtime::JailSpec spec;
  ListenAddress address;
  std::string key;
};

// Everything that can refuse a start, before anything is bound or adopted.
std::optional<std::string> Load(const ServeOptions& o, Loaded* l) {
  if (!o.config_path.empty()) {
    if (Status st = runtime::LoadToolConfigFile(o.config_path, &l->provider, &l->spec); !st) {
      return st.error().message();
    }
    if (Status st = runtime::LoadServerConfigFile(o.config_path, &l->server); !st) {
      return st.error().message();
    }
  }
  if (o.listen) l->server.listen = *o.listen;
  if (o.allow_remote) l->server.allow_remote = true;
  auto address = ParseListenAddress(l->server.listen);
  if (!address) return address.error().message();
  l->address = *address;
  if (!address->loopback && !l->server.allow_remote) {
    return "--listen " + address->ToString() +
           " is not a loopback address: the API would be reachable from the network. Pass "
           "--allow-remote (or set server.allow_remote: true) if that is intended";
  }
  if (address->unspecified && l->server.allowed_hosts.empty()) {
    return "--listen " + address->ToString() +
           " needs server.allowed_hosts: the HOST:PORT names clients use to reach this server "
           "(they are the only Host headers accepted, and the host of every sandbox_url)";
  }
  auto key = ResolveApiKey(l->server.api_key, l->server.api_key_file);
  if (!key) return "API key: " + key.error().message();
  l->key = std::move(*key);
  if (l->key.empty() && !l->server.no_auth) {
    return "no API key: set server.api_key in the config (\"$VAR\" reads a variable), "
           "server.api_key_file, the systemd credential corral-api-key (LoadCredential=) or "
           "CORRAL_API_KEY in the environment. To serve /api/* without a key (anyone who can "
           "connect may create sandboxes), set unsafe: {no_auth: true}";
  }
  return std::nullopt;
}

// A timer that runs `tick` every `period` until `tick` returns false. The pending wait
// keeps it alive; the io_context's end drops it.
struct Periodic : std::enable_shared_from_this<Periodic> {
  Periodic(asio::io_context& io, Clock::duration p, std::function<bool()> t)
      : timer(io), period(p), tick(std::move(t)) {}
  void Arm() {
    timer.expires_after(period);
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && self->tick()) self->Arm();
    });
  }
  asio::steady_timer timer;
  Clock::duration period;
  std::function<bool()> tick;
};

void Every(asio::io_context& io, Clock::duration period, std::function<bool()> tick) {
  std::make_shared<Periodic>(io, period, std::move(tick))->Arm();
}

GaugeSource MakeGauges(SandboxManager& manager, HttpServer& server, AioApi& aio,
                       const runtime::ExecSlotKeeper& slots) {
  return [manager_p = &manager, server_p = &server, aio_p = &aio, slots_p = &slots] {
    SandboxManager& manager = *manager_p;
    HttpServer& server = *server_p;
    AioApi& aio = *aio_p;
    ManagerCounts c = manager.Counts();
    runtime::ExecSlotKeeper::Counts slot = slots_p->counts();
    std::vector<std::pair<std::string, double>> g = {
        {"corral_sandboxes{state=\"running\"}", static_cast<double>(c.running - c.paused)},
        {"corral_sandboxes{state=\"paused\"}", static_cast<double>(c.paused)},
        {"corral_sandbox_events_total{event=\"created\"}", static_cast<double>(c.created)},
        {"corral_sandbox_events_total{event=\"deleted\"}", static_cast<double>(c.deleted)},
        {"corral_sandbox_events_total{event=\"reaped_idle\"}", static_cast<double>(c.reaped_idle)},
        {"corral_sandbox_events_total{event=\"evicted\"}", static_cast<double>(c.evicted)},
        {"corral_sandbox_events_total{event=\"found_dead\"}", static_cast<double>(c.found_dead)},
        {"corral_sandbox_events_total{event=\"paused_idle\"}", static_cast<double>(c.paused_idle)},
        {"corral_sandbox_events_total{event=\"resumed\"}", static_cast<double>(c.resumed)},
        {"corral_sandbox_events_total{event=\"reaped_paused\"}",
         static_cast<double>(c.reaped_paused)},
        {"corral_sandbox_calls_in_flight", static_cast<double>(c.calls_in_flight)},
        {"corral_http_requests_in_flight", static_cast<double>(server.in_flight())},
        {"corral_http_connections", static_cast<double>(server.connections())},
        {"corral_aio_live_sessions", static_cast<double>(aio.live_sessions())},
        {"corral_warm_sandboxes", static_cast<double>(c.warm.ready)},
        {"corral_sandbox_events_total{event=\"created_warm\"}",
         static_cast<double>(c.created_warm)},
        {"corral_warm_pool_events_total{event=\"made\"}", static_cast<double>(c.warm.made)},
        {"corral_warm_pool_events_total{event=\"taken\"}", static_cast<double>(c.warm.taken)},
        {"corral_warm_pool_events_total{event=\"failed\"}", static_cast<double>(c.warm.failed)},
        {"corral_session_slots", static_cast<double>(slot.ready)},
        {"corral_session_slot_events_total{event=\"prepared\"}",
         static_cast<double>(slot.prepared)},
        {"corral_session_slot_events_total{event=\"taken\"}", static_cast<double>(slot.taken)},
        {"corral_session_slot_events_total{event=\"failed\"}", static_cast<double>(slot.failed)},
        {"corral_session_slot_events_total{event=\"evicted\"}", static_cast<double>(slot.evicted)},
    };
    std::vector<std::string> help = {
        "# TYPE corral_sandboxes gauge",
        "# TYPE corral_sandbox_events_total counter",
        "# TYPE corral_sandbox_calls_in_flight gauge",
        "# TYPE corral_http_requests_in_flight gauge",
        "# TYPE corral_http_connections gauge",
        "# TYPE corral_aio_live_sessions gauge",
        "# HELP corral_warm_sandboxes Warm sandboxes ready to be claimed (the pool depth).",
        "# TYPE corral_warm_sandboxes gauge",
        "# TYPE corral_warm_pool_events_total counter",
        "# HELP corral_session_slots Exec slots ready for a warm sandbox's first shell session.",
        "# TYPE corral_session_slots gauge",
        "# TYPE corral_session_slot_events_total counter",
        "# HELP corral_sandbox_cold_creates_total Creates made cold while sandbox.warm is on, "
        "by why (pool_off, spec, pool_empty, claim_failed; the log has the detail).",
        "# TYPE corral_sandbox_cold_creates_total counter"};
    // Every reason, at 0 until it happens: a dashboard sees the series from the start.
    for (const char* reason : {"pool_off", "spec", "pool_empty", "claim_failed"}) {
      auto it = c.created_cold.find(reason);
      g.push_back({std::string("corral_sandbox_cold_creates_total{reason=\"") + reason + "\"}",
                   static_cast<double>(it == c.created_cold.end() ? 0 : it->second)});
    }
    return std::make_pair(g, help);
  };
}

// Idle reaper (and memory trim): often enough to honour sandbox.idle_timeout within ~10 %; one run
// at a time, off the I/O threads.
void StartReaper(asio::io_context& io, asio::thread_pool& blocking, SandboxManager& manager,
                 double idle_timeout) {
  const double period = idle_timeout > 0 ? std::clamp(idle_timeout / 10, 1.0, 30.0) : 10.0;
  auto reaping = std::make_shared<std::atomic<bool>>(false);
  Every(io, std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period)),
        [blocking_p = &blocking, manager_p = &manager, reaping] {
          if (!reaping->exchange(true)) {
            asio::post(*blocking_p, [manager_p, reaping] {
              manager_p->Reap();
              // glibc keeps what a burst of requests freed in its per-thread arenas; give
              // it back, so the daemon's RSS returns near its baseline once the burst ends.
              ::malloc_trim(0);
              reaping->store(false);
            });
          }
          return true;
        });
}

// SIGTERM/SIGINT: stop accepting, give calls in flight until `grace` (AioApi::Shutdown
// answers running commands by then), then stop the I/O loop. A second signal stops at once.
void OnSignals(asio::signal_set& signals, asio::io_context& io, HttpServer& server, AioApi& aio,
               double grace, std::thread* aio_shutdown) {
  // Pointers, not references to the parameters: the handler runs after this returns.
  signals.async_wait([signals_p = &signals, io_p = &io, server_p = &server, aio_p = &aio, grace,
                      aio_shutdown](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: stopping; sandboxes are kept", sig);
    SdNotify("STOPPING=1");
    server_p->StopAccepting();
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(grace));
    *aio_shutdown = std::thread([aio_p, deadline] { aio_p->Shutdown(deadline); });
    Every(*io_p, std::chrono::milliseconds(50), [server_p, io_p, deadline] {
      if (server_p->in_flight() == 0 || Clock::now() >= deadline + std::chrono::seconds(1)) {
        io_p->stop();
        return false;
      }
      return true;
    });
    signals_p->async_wait([io_p](boost::system::error_code again, int) {
      if (!again) io_p->stop();
    });
  });
}

// Every connection is a descriptor, and so is every session's pipe: the soft limit that
// systemd and login shells hand out (1024) is below the default server.max_connections.
// The sandboxes' own limit is their spec's (limits.open_files), whatever the daemon's.
void RaiseFdLimit(int max_connections) {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
  const rlim_t wanted = static_cast<rlim_t>(max_connections) * 2 + 256;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted) {
    spdlog::warn(
        "open files are limited to {} (RLIMIT_NOFILE), fewer than server.max_connections "
        "({}) needs with the sandboxes' sessions; raise LimitNOFILE= or lower "
        "server.max_connections",
        limit.rlim_max, max_connections);
  }
}

}  // namespace

int RunServe(const ServeOptions& options) {
  UseThreadSafeLogger();
  Loaded cfg;
  if (auto problem = Load(options, &cfg)) return Fail(*problem);
  if (cfg.key.empty()) {
    spdlog::warn(
        "UNSAFE: unsafe.no_auth is set and no API key is configured: anyone who can "
        "connect to {} may create sandboxes and run commands in them",
        cfg.address.ToString());
  }
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not a signal
  RaiseFdLimit(cfg.server.max_connections);
  if (auto store = runtime::SandboxStore::Open(); !store) return Fail(store.error().message());
  auto registry = SandboxRegistry::Open(runtime::RuntimeDir() + "/serve");
  if (!registry) return Fail(registry.error().message());

  // Before the sessions and the warm pool that use it, so destroyed after them: a slot's
  // process, and a shell started in one, dies with the keeper's thread. The sessions'
  // shells are child subreapers (runtime/sessions/proc_tree.h); a slot of a warm sandbox waits
  // for its claim's mounts, so its Landlock rules are made when its shell starts.
  runtime::ExecSlotKeeper session_slots({static_cast<size_t>(cfg.server.session_slots),
                                         {.child_subreaper = true, .late_hardening = true}});
  AioApiOptions aio_options;
  aio_options.session_slots = &session_slots;
  AioApi aio(aio_options);
  SandboxManager manager({cfg.provider, cfg.spec, cfg.server.max_sandboxes, &session_slots},
                         std::move(*registry), &aio);
  const auto adopt_start = std::chrono::steady_clock::now();
  for (const std::string& line : manager.Adopt()) spdlog::warn("adopting: {}", line);
  spdlog::info(
      "adopted {} live sandboxes in {:.2f} s", manager.Counts().running,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - adopt_start).count());
  auto access_log = AccessLog::Open(cfg.server.access_log);
  if (!access_log) return Fail(access_log.error().message());

  asio::io_context io(cfg.server.io_threads);
  // Creates and deletes wait on the kernel (namespaces, cgroups, RCU), not the CPU: a burst
  // of DELETEs runs as wide as `corral rm` of many does.
  asio::thread_pool blocking(static_cast<size_t>(runtime::DefaultRemovalParallelism()));
  Metrics metrics;
  std::unique_ptr<Router> router;
  HttpServer server(
      io, cfg.server,
      [&router](HttpRequest req, Reply reply) { router->Handle(std::move(req), std::move(reply)); },
      [&metrics, log = access_log->get()](const std::string& client, int status, const char* why) {
        metrics.Record("-", "-", status, 0);
        log->Write({client, "-", std::string("- (") + why + ")", "", status, 0, 0});
      });
  if (Status st = server.Listen(cfg.address); !st) return Fail(st.error().message());
  // No sandbox's allow-list proxy may reach this API, whatever its rules.
  if (!cfg.address.is_unix) runtime::net::AddOwnEndpoint(cfg.address.host, server.bound_port());
  HostCheck host_check(cfg.address, server.bound_port(), cfg.server.allowed_hosts);
  GaugeSource gauges = MakeGauges(manager, server, aio, session_slots);
  router = std::make_unique<Router>(
      RouterOptions{cfg.key, cfg.server.no_auth, cfg.server.metrics_need_key, cfg.provider.base_dir,
                    cfg.provider.resume_on_call},
      host_check, &manager, &aio, &metrics, access_log->get(), &blocking, gauges);
  // After the server: destroyed before it, so no exec's reply reaches a server that is gone.
  CorralApiOptions corral_options{cfg.spec, cfg.provider.base_dir};
  corral_options.io = &io;
  corral_options.resume_on_call = cfg.provider.resume_on_call;
  corral_options.max_execs = cfg.server.max_execs;
  CorralApi corral_api(std::move(corral_options));
  router->SetCorralApi(&corral_api);
  server.Start();
  if (auto why = manager.StartWarmPool()) spdlog::warn("{}", *why);

  StartReaper(io, blocking, manager, cfg.provider.idle_timeout);

  std::thread aio_shutdown;
  asio::signal_set signals(io, SIGTERM, SIGINT);
  OnSignals(signals, io, server, aio, cfg.server.shutdown_grace, &aio_shutdown);

  std::fprintf(
      stderr, "corral serve: listening on %s (%zu sandboxes adopted)\n",
      cfg.address.is_unix
          ? cfg.address.ToString().c_str()
          : ("http://" + cfg.address.host + ":" + std::to_string(server.bound_port())).c_str(),
      manager.Counts().running);
  SdNotify("READY=1");

  std::vector<std::thread> threads;
  for (int i = 1; i < cfg.server.io_threads; ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  if (aio_shutdown.joinable()) aio_shutdown.join();
  blocking.join();
  // Thread sandboxes stay for the next daemon; warm ones belong to nobody once we are gone.
  manager.StopWarmPool();
  spdlog::info("stopped");
  return 0;
}

}  // namespace corral::server
