// corral-netproxy: the per-sandbox proxy and resolver of `network.mode: allowlist`.
// Parses the command line (the contract is in runtime/netproxy/proxy.h) and runs the proxy.
#include <fcntl.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "runtime/netproxy/proxy.h"

namespace {

constexpr int kNetnsFd = 3;
constexpr int kReadyFd = 4;

// An inherited fd, close-on-exec from now on; an invalid one if it is not open.
corral::UniqueFd Inherited(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0) return corral::UniqueFd();
  ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  return corral::UniqueFd(fd);
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_st("corral-netproxy"));
  spdlog::set_pattern("corral-netproxy: %l: %v");
  spdlog::set_level(spdlog::level::warn);
  spdlog::cfg::load_env_levels();

  CLI::App app{
      "corral-netproxy: the allow-list proxy and resolver of one sandbox (started by corral)"};
  std::string sandbox, policy_json, log_path, summary_path;
  std::optional<pid_t> watch_pid;
  app.add_option("--sandbox", sandbox, "the sandbox's name, for the log")->required();
  app.add_option("--policy-json", policy_json, "the policy (Policy::ToJson)")->required();
  app.add_option("--log", log_path, "the decisions log (JSON lines, appended)")->required();
  app.add_option("--summary", summary_path, "the summary JSON (rewritten)")->required();
  app.add_option("--watch-pid", watch_pid, "exit when this process has exited");
  CLI11_PARSE(app, argc, argv);

  corral::runtime::net::ProxyOptions options;
  options.ready = Inherited(kReadyFd);
  options.netns = Inherited(kNetnsFd);
  auto fail = [&options](const std::string& why) {
    spdlog::error("{}", why);
    corral::runtime::net::ReportReadiness(options.ready, "error: " + why);
    return 2;
  };
  if (!options.netns) return fail("fd 3 (the jail's network namespace) is not open");
  const nlohmann::json json = nlohmann::json::parse(policy_json, nullptr, false);
  if (json.is_discarded()) return fail("--policy-json is not valid JSON");
  auto policy = corral::runtime::net::Policy::FromJson(json);
  if (!policy) return fail("--policy-json: " + policy.error().message());
  options.sandbox = sandbox;
  options.policy = std::move(*policy);
  options.log_path = log_path;
  options.summary_path = summary_path;
  options.watch_pid = watch_pid;
  return corral::runtime::net::RunProxy(std::move(options));
}
