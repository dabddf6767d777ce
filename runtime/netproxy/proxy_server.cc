// RunProxy (proxy.h): start-up, the stop signals, the summary's timer, the end.
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <cstdio>
#include <vector>

#include "runtime/net/in_jail.h"
#include "runtime/netproxy/dns_server.h"
#include "runtime/netproxy/proxy.h"
#include "runtime/netproxy/proxy_awaitable.h"
#include "runtime/netproxy/proxy_context.h"
#include "runtime/netproxy/proxy_http.h"
#include "runtime/netproxy/proxy_listen.h"
#include "runtime/netproxy/proxy_socks.h"

namespace corral::runtime::net {

namespace asio = boost::asio;

namespace {

constexpr auto kSummaryInterval = std::chrono::seconds(1);

IpAddress Loopback() { return *IpAddress::Parse(kProxyHost); }

// Capture listeners are one fd per name and port: allow as many as the hard limit does.
void RaiseFdLimit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

Status StartListeners(ProxyContext& ctx) {
  const std::vector<ListenSpec> specs = {{true, Loopback(), kHttpProxyPort},
                                         {true, Loopback(), kSocksPort},
                                         {false, Loopback(), kDnsPort},
                                         {true, Loopback(), kDnsPort}};
  ASSIGN_OR_RETURN(std::vector<UniqueFd> fds, ctx.netns.Listen(specs));
  RETURN_IF_ERROR(
      StartAcceptLoop(ctx, std::move(fds[0]), ServeHttpProxyClient, "http proxy 127.0.0.1:3128"));
  RETURN_IF_ERROR(
      StartAcceptLoop(ctx, std::move(fds[1]), ServeSocksClient, "socks5 127.0.0.1:1080"));
  return StartDnsServers(ctx, std::move(fds[2]), std::move(fds[3]));
}

void WriteSummary(ProxyContext& ctx, const std::string& path) {
  if (path.empty()) return;
  if (Status s = ctx.stats.WriteTo(path); !s) spdlog::error("{}", s.error().message());
}

asio::awaitable<void> SummaryLoop(ProxyContext& ctx, std::string path) {
  asio::steady_timer timer(*ctx.io);
  for (;;) {
    timer.expires_after(kSummaryInterval);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    if (ctx.stats.dirty()) WriteSummary(ctx, path);
  }
}

// Stops the io_context when the watched process has exited (its pidfd turns readable).
// `sandbox_gone` tells Finish that nobody will read the summary any more.
Status WatchProcess(asio::io_context& io, pid_t pid,
                    std::optional<asio::posix::stream_descriptor>* watch, bool* sandbox_gone) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0)
    return Error::FromErrno(errno, "--watch-pid " + std::to_string(pid) + ": pidfd_open");
  watch->emplace(io, pidfd);
  (*watch)->async_wait(asio::posix::descriptor_base::wait_read,
                       [&io, pid, sandbox_gone](boost::system::error_code ec) {
                         if (ec) return;
                         spdlog::info("process {} has exited; stopping", pid);
                         *sandbox_gone = true;
                         io.stop();
                       });
  return Ok();
}

// The end: every open connection's close event, the summary, then _exit (proxy.h).
// A persistent sandbox's proxy that ends with its init removes the summary instead: the
// sandbox is gone (corral rm), and a file written now would outlive it.
[[noreturn]] void Finish(ProxyContext& ctx, const std::string& summary_path, bool sandbox_gone) {
  const std::vector<ConnectionRecord*> open(ctx.live.begin(), ctx.live.end());
  for (ConnectionRecord* record : open) record->End("", true);
  if (sandbox_gone) {
    ::unlink(summary_path.c_str());
  } else {
    WriteSummary(ctx, summary_path);
  }
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  ::_exit(0);
}

}  // namespace

void ReportReadiness(UniqueFd& ready, const std::string& line) {
  if (!ready) return;
  const std::string text = line + "\n";
  ssize_t n;
  do {
    n = ::write(ready.get(), text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  ready.Reset();
}

int RunProxy(ProxyOptions options) {
  std::signal(SIGPIPE, SIG_IGN);  // a write to a vanished reader is an error code, not death
  RaiseFdLimit();
  Result<DecisionLog> log = DecisionLog::Open(options.log_path, options.sandbox);
  if (!log) {
    ReportReadiness(options.ready, "error: " + log.error().message());
    return 1;
  }
  ProxyContext ctx(options.sandbox, std::move(options.policy), std::move(*log),
                   JailNetns(std::move(options.netns)));
  asio::io_context io(1);
  ctx.io = &io;
  std::optional<asio::posix::stream_descriptor> watch;
  bool sandbox_gone = false;
  Status started = StartListeners(ctx);
  if (started && options.watch_pid)
    started = WatchProcess(io, *options.watch_pid, &watch, &sandbox_gone);
  if (started) started = ctx.stats.WriteTo(options.summary_path);
  if (!started) {
    spdlog::error("{}", started.error().message());
    ReportReadiness(options.ready, "error: " + started.error().message());
    return 1;
  }
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&io](boost::system::error_code ec, int) {
    if (!ec) io.stop();
  });
  Spawn(io.get_executor(), SummaryLoop(ctx, options.summary_path), "summary");
  ReportReadiness(options.ready, "ready");
  io.run();
  Finish(ctx, options.summary_path, sandbox_gone);
}

}  // namespace corral::runtime::net
