// `corral pool [JAIL OPTIONS] [--size N] [--socket PATH]`: a pool server in the
// foreground (runtime/pool/pool_server.h). `corral run` with the same jail options (the
// network policy included: --network, --allow, --deny, `network:` in --config) then runs
// in its pre-built jails; until SIGINT/SIGTERM, after which it cleans up and exits 0.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "cli/commands.h"
#include "cli/jail_flags.h"
#include "runtime/pool/pool_protocol.h"
#include "runtime/pool/pool_server.h"

namespace corral::cli {

namespace {

struct PoolFlags {
  JailFlags jail;
  size_t size = 2;
  std::string socket;
};

int Serve(const PoolFlags& flags) {
  runtime::JailSpec spec;
  if (!BuildSpec(flags.jail, &spec)) return 125;
  // Blocked before any thread exists, so that every thread inherits the mask and the stop
  // signals reach only the signalfd below.
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, sig);
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  UniqueFd stop_fd(::signalfd(-1, &stop, SFD_CLOEXEC));

  runtime::PoolServerOptions options;
  options.size = flags.size;
  options.socket_path = flags.socket;
  auto server = runtime::PoolServer::Start(spec, options);
  if (!server) {
    std::fprintf(stderr, "corral: pool: %s\n", server.error().message().c_str());
    return 125;
  }
  // The network policy is part of what a run must match to be served here; say which.
  std::string network = "network " + std::string(runtime::Name(spec.network.mode));
  if (spec.network.mode == runtime::NetworkMode::kAllowlist) {
    network += " (" + std::to_string(spec.network.allow.size()) + " allowed, " +
               std::to_string(spec.network.deny.size()) + " denied; a proxy per jail)";
  }
  std::fprintf(stderr, "corral: pool: filling %zu jails, %s; serving %s\n", flags.size,
               network.c_str(), (*server)->socket_path().c_str());
  if (auto full = (*server)->pool().WaitUntilFull(); !full) {
    // Not fatal: the host may recover (a cgroup parent freed, say); runs prepare on demand.
    std::fprintf(stderr, "corral: pool: warning: cannot prepare jails yet: %s\n",
                 full.error().message().c_str());
  } else {
    std::fprintf(stderr, "corral: pool: ready\n");
  }
  Status served = (*server)->Serve(stop_fd.get());
  std::fprintf(stderr, "corral: pool: stopping\n");
  server->reset();
  if (!served) {
    std::fprintf(stderr, "corral: pool: %s\n", served.error().message().c_str());
    return 125;
  }
  return 0;
}

}  // namespace

void AddPoolCommand(CLI::App& app, int* exit_code) {
  CLI::App* pool = app.add_subcommand(
      "pool", "keep one-shot jails ready for `corral run` (a pool server, in the foreground)");
  auto flags = std::make_shared<PoolFlags>();
  AddJailFlags(pool, &flags->jail);
  pool->add_option("--size", flags->size, "jails kept ready (default 2)")->check(CLI::Range(1, 64));
  pool->add_option("--socket", flags->socket,
                   "where to listen (default " + runtime::DefaultPoolSocket() + ")");
  pool->callback([flags, exit_code] { *exit_code = Serve(*flags); });
}

}  // namespace corral::cli
