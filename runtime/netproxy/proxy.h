// corral-netproxy: the per-sandbox proxy and resolver of `network.mode: allowlist`.
//
// Process contract (corral's supervisor starts it; runtime/netproxy/main.cc parses):
//   corral-netproxy --sandbox NAME --policy-json JSON --log PATH --summary PATH
//                   [--watch-pid PID]
//   fd 3  the jail's network namespace (open("/proc/<pid>/ns/net")), inherited
//   fd 4  a pipe: "ready\n" once every listener is up, or "error: <why>\n"; then closed
// It runs in the host's network namespace and listens in the jail's (proxy_netns.h), on
// the jail's loopback (brought up first):
//   127.0.0.1:3128/tcp  HTTP proxy: forward and CONNECT         (proxy_http.h)
//   127.0.0.1:1080/tcp  SOCKS5                                  (proxy_socks.h)
//   127.0.0.1:53        the resolver, UDP and TCP               (dns_server.h)
//   127.100.x.y:<port>  capture listeners, made per allowed name (proxy_tcp.h)
// Every way out goes through one decision (proxy_upstream.h), logged to --log
// (proxy_log.h); counters go to --summary (proxy_summary.h) at most once a second while
// running and at exit.
//
// One I/O thread (C++20 coroutines on Asio) serves everything; state is shared without
// locks (proxy_context.h). Ends with exit code 0 on SIGTERM/SIGINT or when the process
// --watch-pid names has exited (pidfd). The process then ends by _exit after logging the
// end of every open connection and writing the summary: tearing the io_context down would
// wait for Asio's resolver thread, which may sit in getaddrinfo for seconds.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "runtime/net/policy.h"

namespace corral::runtime::net {

struct ProxyOptions {
  std::string sandbox;
  Policy policy;
  std::string log_path;
  std::string summary_path;
  std::optional<pid_t> watch_pid;
  UniqueFd netns;  // fd 3
  UniqueFd ready;  // fd 4
};

// Serves until told to stop, then ends the process (exit code 0). Returns only when
// start-up failed, with the exit code (after "error: ..." went to the ready pipe).
int RunProxy(ProxyOptions options);

// Writes `line` + "\n" to the ready pipe and closes it (ignored if it is not open).
void ReportReadiness(UniqueFd& ready, const std::string& line);

}  // namespace corral::runtime::net
