// Starting and ending corral-netproxy, the per-sandbox proxy and resolver of a jail in
// `network.mode: allowlist` (runtime/netproxy/main.cc). Parent side: runs in corral
// (the supervisor of a one-shot run, `corral create`, the pool server or the daemon).
//
// One-shot run: StartInNewNamespace makes a network namespace (on a short-lived thread:
// network namespaces are per thread), starts the proxy on it and waits until its
// listeners are up; only then does the jail join that namespace (jail::JailPlan::net_ns_fd),
// so the command's first connection already finds the proxy. The proxy dies with the
// thread that started it (PR_SET_PDEATHSIG) at the latest; Finish() ends it and returns
// its summary for the run's outcome.
//
// Persistent sandbox: StartForSandbox serves the init's namespace (/proc/<init>/ns/net)
// from a detached proxy that ends by itself when the init exits (--watch-pid). It is
// started before `create` returns, so before any exec can run.
//
// The decisions of every proxy are appended, one JSON object per line, to
// <runtime dir>/network.jsonl; each proxy's running summary is a JSON file (SummaryPath).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/net/policy.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::net {

struct LaunchOptions {
  std::string runtime_dir;  // where network.jsonl and the summaries live
  std::string sandbox;      // a name for the logs: the sandbox's name, or "run-<pid>"
  std::string summary_path;
  // Endpoints never reached whatever the rules say: corral's own API (port 0 = any).
  std::vector<std::pair<IpAddress, uint16_t>> never;
};

class NetworkService {
 public:
  static Result<NetworkService> StartInNewNamespace(const JailSpec& spec,
                                                    const LaunchOptions& options);
  static Result<NetworkService> StartForSandbox(const JailSpec& spec, pid_t init_pid,
                                                const LaunchOptions& options);

  NetworkService(NetworkService&& other) noexcept;
  NetworkService& operator=(NetworkService&& other) noexcept;  // ends ours first
  ~NetworkService();

  int netns_fd() const { return netns_.get(); }
  pid_t pid() const { return pid_; }

  // The name its decision log lines carry (LaunchOptions::sandbox).
  const std::string& sandbox() const { return sandbox_; }

  // Ends the proxy (SIGTERM; SIGKILL after 3 s) and returns its summary JSON ("" if none),
  // with "sandbox": that name added, so that a run's outcome points at its log lines.
  std::string Finish();
  // Leaves a detached proxy running (a persistent sandbox's).
  void Release() { pid_ = -1; }

 private:
  NetworkService() = default;

  UniqueFd netns_;
  pid_t pid_ = -1;
  bool own_child_ = false;  // our child (one-shot) or detached (reparented)
  std::string sandbox_;
  std::string summary_path_;
};

// Registers an endpoint of this process's own service (the daemon's API) that no proxy
// started by this process may reach, whatever its rules; an unspecified address (0.0.0.0,
// ::) stands for every address of the host's interfaces. Thread-safe.
void AddOwnEndpoint(const std::string& host, uint16_t port);

// Where corral-netproxy is: an explicit $CORRAL_NETPROXY_PROGRAM, else next to our own
// executable, the install location, the build tree (like corral-init). Only a root- or
// self-owned file that no group or other may write is accepted.
Result<std::string> FindNetproxyProgram();

// <runtime dir>/network.jsonl
std::string DecisionsLogPath(const std::string& runtime_dir);

// The summary a running or finished proxy left at `path`, as JSON text ("" if none).
std::string ReadSummary(const std::string& path);

}  // namespace corral::runtime::net
