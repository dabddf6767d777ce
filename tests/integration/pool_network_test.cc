// `corral pool` with a network policy: a pool started with an allow-list keeps jails whose
// network namespaces already have their own corral-netproxy (one per jail), serves the runs
// whose spec — network policy included — is the pool's, and never serves a run with another
// policy. Through the binary, like pool_server_test.cc; the origin server and the names are
// those of net_allowlist_test.cc (127.0.0.1 only, unsafe.network_resolve). Root only;
// leak-checked (the pool's proxies must end with it).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "runtime/pool/pool_client.h"
#include "tests/support/jail_test.h"
#include "tests/support/loopback.h"
#include "tests/support/processes.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

using nlohmann::json;

// Pids of the corral-netproxy processes whose --sandbox starts with `prefix`, anywhere.
std::vector<pid_t> ProxiesNamed(const std::string& prefix) {
  const std::string needle = std::string("--sandbox") + '\0' + prefix;
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find("corral-netproxy") != std::string::npos &&
        cmdline.find(needle) != std::string::npos) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

class PoolNetworkTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    port_ = FreeLoopbackPort();
    auto pid =
        StartProgram({"/usr/bin/python3", SourceDir() + "/tests/integration/data/net_origin.py",
                      std::to_string(port_)});
    ASSERT_TRUE(pid) << pid.error().message();
    origin_ = *pid;
    ASSERT_TRUE(WaitForLoopbackListener(port_)) << "the origin server did not start";
    const std::string p = std::to_string(port_);
    const std::string resolve =
        "unsafe:\n"
        "  network_resolve: {allowed.test: 127.0.0.1, pypi.test: 127.0.0.1,\n"
        "                    denied.test: 127.0.0.1, a.wild.test: 127.0.0.1}\n";
    WriteConfig("allow.yaml", "network:\n  mode: allowlist\n  allow: [\"allowed.test:" + p +
                                  "\", \"*.wild.test:" + p + "\"]\n" + resolve);
    // Another list: pypi.test only.
    WriteConfig("other-allow.yaml",
                "network:\n  mode: allowlist\n  allow: [\"pypi.test:" + p + "\"]\n" + resolve);
    // allow.yaml's list plus a deny rule.
    WriteConfig("other-deny.yaml", "network:\n  mode: allowlist\n  allow: [\"allowed.test:" + p +
                                       "\", \"*.wild.test:" + p + "\"]\n  deny: [a.wild.test]\n" +
                                       resolve);
    WriteConfig("none.yaml", "network:\n  mode: none\n");
    socket_ = dir_.Join("pool.sock");
  }

  void TearDown() override {
    EXPECT_EQ(StopPool(), 0);
    if (origin_ > 0) {
      ::kill(origin_, SIGKILL);
      ::waitpid(origin_, nullptr, 0);
    }
    JailTest::TearDown();
  }

  void WriteConfig(const std::string& name, const std::string& text) {
    std::ofstream(dir_.Join(name)) << text;
  }

  // `corral pool --config <config>` on socket_, until it is full.
  void StartPool(const std::string& config, int size = 1) {
    ::setenv("CORRAL_RUNTIME_DIR", dir_.Join("run").c_str(), 1);
    auto pid = StartProgram({CorralBinary(), "pool", "--size", std::to_string(size), "--socket",
                             socket_, "--config", dir_.Join(config)});
    ::unsetenv("CORRAL_RUNTIME_DIR");
    ASSERT_TRUE(pid) << pid.error().message();
    server_ = *pid;
    struct stat st;
    for (int i = 0; i < 500 && ::stat(socket_.c_str(), &st) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Status ready = runtime::WaitForPoolReady(socket_);
    ASSERT_TRUE(ready) << "pool server did not come up: " << ready.error().message();
  }

  // SIGTERM to the server; its exit status (-1 if it had to be killed).
  int StopPool() {
    if (server_ <= 0) return 0;
    ::kill(server_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(server_, &status, WNOHANG) == server_) {
        server_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(server_, SIGKILL);
    ::waitpid(server_, &status, 0);
    server_ = -1;
    return -1;
  }

  // `corral run --json --pool <socket> [--config <config>] -- bash -c <script>`.
  Result<RunResult> RunRaw(const std::string& script, const std::string& config,
                           const std::string& pool) {
    RunOptions options;
    options.env = {"CORRAL_RUNTIME_DIR=" + dir_.Join("run")};
    options.timeout = std::chrono::seconds(120);
    std::vector<std::string> args = {"run", "--json", "--pool", pool};
    if (!config.empty()) args.insert(args.end(), {"--config", dir_.Join(config)});
    args.insert(args.end(), {"--", "/bin/bash", "-c", script});
    return RunCorral(args, options);
  }
  json Run(const std::string& script, const std::string& config = "allow.yaml") {
    auto r = RunRaw(script, config, socket_);
    EXPECT_TRUE(r) << r.error().message();
    if (!r) return json::object();
    json outcome = json::parse(r->out, nullptr, false);
    EXPECT_TRUE(outcome.is_object()) << r->Describe();
    return outcome.is_object() ? outcome : json::object();
  }
  static std::string Out(const json& o) { return o.value("stdout", ""); }
  static bool Pooled(const json& o) { return o.value("pooled", false); }
  static std::string Sandbox(const json& o) {
    return o.contains("network") ? o["network"].value("sandbox", "") : "";
  }
  std::string Url(const std::string& host) const {
    return "http://" + host + ":" + std::to_string(port_) + "/hello";
  }
  // curl through the proxy the environment names: the status code, then the page's line
  // (curl creates its output file only once a body arrives: removed first).
  std::string Curl(const std::string& host) const {
    return "rm -f /tmp/body; curl -s -m 20 -w '%{http_code}\\n' -o /tmp/body " + Url(host) +
           "; grep -h origin /tmp/body 2>/dev/null; true";
  }

  // Every line of the pool's decision log, parsed.
  std::vector<json> DecisionLog() {
    std::vector<json> out;
    std::ifstream log(dir_.Join("run/network.jsonl"));
    for (std::string line; std::getline(log, line);) {
      json entry = json::parse(line, nullptr, false);
      if (entry.is_object()) out.push_back(std::move(entry));
    }
    return out;
  }
  std::string ServerPrefix() const { return "pool-" + std::to_string(server_) + "-"; }

  TempDir dir_;
  std::string socket_;
  uint16_t port_ = 0;
  pid_t origin_ = -1;
  pid_t server_ = -1;
};

TEST_F(PoolNetworkTest, AnAllowListPoolServesItsRunsThroughEachJailsOwnProxy) {
  StartPool("allow.yaml");
  json first = Run(Curl("allowed.test") + "; " + Curl("denied.test"));
  EXPECT_TRUE(Pooled(first)) << first.dump();
  EXPECT_EQ(first.value("exit_code", -1), 0) << first.dump();
  EXPECT_EQ(Out(first), "200\nhello from origin\n403\n") << first.dump();
  ASSERT_TRUE(first.contains("network")) << first.dump();
  EXPECT_EQ(first["network"].value("mode", ""), "allowlist") << first.dump();
  EXPECT_EQ(first["network"].value("allowed", 0), 1) << first["network"].dump();
  EXPECT_EQ(first["network"].value("denied_count", 0), 1) << first["network"].dump();
  EXPECT_NE(first["network"]["denied"].dump().find("denied.test"), std::string::npos)
      << first["network"].dump();
  EXPECT_EQ(Sandbox(first).rfind(ServerPrefix(), 0), 0u) << first["network"].dump();

  // More runs than jails kept ready: each gets a proxy of its own, whose summary and log
  // lines hold that run's decisions only.
  json second = Run(Curl("a.wild.test"));
  json third = Run(Curl("a.wild.test"));
  for (const json* o : {&second, &third}) {
    EXPECT_TRUE(Pooled(*o)) << o->dump();
    EXPECT_EQ(Out(*o), "200\nhello from origin\n") << o->dump();
    ASSERT_TRUE(o->contains("network")) << o->dump();
    EXPECT_EQ((*o)["network"].value("denied_count", -1), 0) << (*o)["network"].dump();
    EXPECT_EQ((*o)["network"].value("allowed", 0), 1) << (*o)["network"].dump();
    EXPECT_EQ(Sandbox(*o).rfind(ServerPrefix(), 0), 0u) << (*o)["network"].dump();
  }
  std::set<std::string> names = {Sandbox(first), Sandbox(second), Sandbox(third)};
  EXPECT_EQ(names.size(), 3u) << "a proxy per jail";

  std::map<std::string, std::string> hosts;  // sandbox -> "host/decision ..."
  for (const json& entry : DecisionLog()) {
    if (!entry.contains("decision")) continue;
    hosts[entry.value("sandbox", "")] +=
        entry.value("host", "") + "/" + entry.value("decision", "") + " ";
  }
  EXPECT_EQ(hosts[Sandbox(first)], "allowed.test/allow denied.test/deny ");
  EXPECT_EQ(hosts[Sandbox(second)], "a.wild.test/allow ");
  EXPECT_EQ(hosts[Sandbox(third)], "a.wild.test/allow ");
}

TEST_F(PoolNetworkTest, ARunWithAnotherPolicyIsNeverServedByThePool) {
  StartPool("allow.yaml");
  // Another allow-list: a cold run with its own proxy and its own list.
  json other = Run(Curl("allowed.test") + "; " + Curl("pypi.test"), "other-allow.yaml");
  EXPECT_FALSE(Pooled(other)) << other.dump();
  EXPECT_EQ(Out(other), "403\n200\nhello from origin\n") << other.dump();
  EXPECT_EQ(Sandbox(other).rfind("run-", 0), 0u) << other.dump();

  // The pool's list plus one deny rule: not the pool's policy either.
  json deny = Run(Curl("a.wild.test") + "; " + Curl("allowed.test"), "other-deny.yaml");
  EXPECT_FALSE(Pooled(deny)) << deny.dump();
  EXPECT_EQ(Out(deny), "403\n200\nhello from origin\n") << deny.dump();

  // No network policy at all (mode none): no proxy, nothing reached.
  json none = Run("curl -s -m 5 -o /dev/null " + Url("allowed.test") + "; echo curl=$?", "");
  EXPECT_FALSE(Pooled(none)) << none.dump();
  EXPECT_NE(Out(none).rfind("curl=", 0), std::string::npos) << none.dump();
  EXPECT_NE(Out(none), "curl=0\n") << none.dump();
  EXPECT_FALSE(none.contains("network")) << none.dump();

  // The pool's own policy still is served, by the pool.
  json same = Run(Curl("allowed.test"));
  EXPECT_TRUE(Pooled(same)) << same.dump();
  EXPECT_EQ(Out(same), "200\nhello from origin\n") << same.dump();
}

TEST_F(PoolNetworkTest, APoolWithoutANetworkDoesNotServeAllowListRuns) {
  StartPool("none.yaml");
  EXPECT_TRUE(ProxiesNamed(ServerPrefix()).empty()) << "a `none` pool starts no proxy";
  json allow = Run(Curl("allowed.test"));
  EXPECT_FALSE(Pooled(allow)) << allow.dump();
  EXPECT_EQ(Out(allow), "200\nhello from origin\n") << allow.dump();
  EXPECT_EQ(Sandbox(allow).rfind("run-", 0), 0u) << allow.dump();
}

TEST_F(PoolNetworkTest, ANonePoolStillReachesNothing) {
  StartPool("none.yaml");
  const std::string py =
      "python3 -c \"import socket, errno\n"
      "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
      "try:\n  u.sendto(b'x', ('8.8.8.8', 53)); print('udp sent')\n"
      "except OSError as e: print('udp', errno.errorcode[e.errno])\n"
      "try:\n  socket.create_connection(('10.0.0.1', 80), timeout=3); print('tcp ok')\n"
      "except OSError as e: print('tcp', errno.errorcode.get(e.errno, e))\n"
      "try:\n  socket.create_connection(('127.0.0.1', " +
      std::to_string(port_) +
      "), timeout=3); print('origin ok')\n"
      "except OSError as e: print('origin', errno.errorcode.get(e.errno, e))\"";
  json none = Run(py + "; curl -s -m 5 -o /dev/null " + Url("allowed.test") + "; echo curl=$?",
                  "none.yaml");
  EXPECT_TRUE(Pooled(none)) << none.dump();
  EXPECT_EQ(Out(none).rfind("udp ENETUNREACH\ntcp ENETUNREACH\norigin ECONNREFUSED\ncurl=", 0), 0u)
      << none.dump();
  EXPECT_EQ(Out(none).find("curl=0"), std::string::npos) << none.dump();
  EXPECT_FALSE(none.contains("network")) << none.dump();
}

TEST_F(PoolNetworkTest, StoppingAnAllowListPoolEndsEveryProxyAndLeavesNothing) {
  StartPool("allow.yaml", 2);
  // A proxy per ready jail, children of the server.
  size_t proxies = 0;
  for (const ChildStatus& c : ChildrenOf(server_)) {
    if (StatusField(c.status, "Name") == "corral-netproxy") ++proxies;
  }
  EXPECT_EQ(proxies, 2u);
  EXPECT_EQ(ProxiesNamed(ServerPrefix()).size(), 2u);
  json run = Run(Curl("allowed.test"));
  EXPECT_TRUE(Pooled(run)) << run.dump();
  // The run's proxy ended with it (its summary is in the outcome, its file gone).
  EXPECT_TRUE(ProxiesNamed(Sandbox(run)).empty()) << Sandbox(run);
  EXPECT_NE(::access(dir_.Join("run/" + Sandbox(run) + ".network.json").c_str(), F_OK), 0);
  ASSERT_TRUE(runtime::WaitForPoolReady(socket_));
  EXPECT_EQ(ProxiesNamed(ServerPrefix()).size(), 2u) << "refilled with a proxy each";

  const std::string prefix = ServerPrefix();
  EXPECT_EQ(StopPool(), 0);
  EXPECT_TRUE(ProxiesNamed(prefix).empty()) << "a pooled jail's proxy outlived the pool";
  for (const auto& entry : std::filesystem::directory_iterator(dir_.Join("run"))) {
    const std::string name = entry.path().filename();
    EXPECT_EQ(name.find(".network.json"), std::string::npos) << "left behind: " << name;
  }
  struct stat st;
  EXPECT_NE(::stat(socket_.c_str(), &st), 0) << "socket left behind";
  // The fixture's leak check covers processes, mounts and cgroups.
}

// An exec into an allow-list sandbox through the pool's exec slot joins the sandbox's
// namespaces, so its network is the sandbox's proxy, as for an exec without the pool.
TEST_F(PoolNetworkTest, AnExecSlotOfAnAllowListSandboxUsesTheSandboxsProxy) {
  StartPool("none.yaml");
  RunOptions options;
  options.env = {"CORRAL_RUNTIME_DIR=" + dir_.Join("run")};
  const std::string name = "poolnet-" + std::to_string(::getpid());
  auto created =
      RunCorral({"create", "--name", name, "--config", dir_.Join("allow.yaml")}, options);
  ASSERT_TRUE(created && created->exit_code == 0) << (created ? created->Describe() : "");
  auto exec = [&] {
    return RunJailed(CorralBinary(),
                     {"exec", "--json", "--pool", socket_, name, "--", "/bin/bash", "-c",
                      Curl("allowed.test") + "; " + Curl("denied.test")},
                     options);
  };
  auto first = exec();  // cold: the slot is prepared after it
  Result<JailRun> pooled = Error(ErrorCode::kNotFound, "never pooled");
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pooled = exec();
    if (!pooled || pooled->outcome.value("pooled", false)) break;
  }
  auto removed = RunCorral({"rm", name}, options);
  ASSERT_TRUE(first && pooled && removed);
  EXPECT_EQ(first->outcome["stdout"], "200\nhello from origin\n403\n") << first->Describe();
  EXPECT_EQ(pooled->outcome.value("pooled", false), true) << pooled->Describe();
  EXPECT_EQ(pooled->outcome["stdout"], "200\nhello from origin\n403\n") << pooled->Describe();
  EXPECT_EQ(removed->exit_code, 0) << removed->Describe();
}

// Not a check: the latency of `corral run` with an allow-list, pooled and cold, medians of
// 20 runs each in this one test (a pause between runs, so that the pool refills as it
// would between an agent's commands).
TEST_F(PoolNetworkTest, PrintsPooledAndColdAllowListRunFigures) {
  StartPool("allow.yaml", 2);
  auto median_ms = [&](const std::string& pool, const std::string& script, bool want_pooled) {
    std::vector<double> wall;
    for (int i = 0; i < 20; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      auto r = RunRaw(script, "allow.yaml", pool);
      if (!r || r->exit_code != 0) {
        ADD_FAILURE() << (r ? r->Describe() : r.error().message());
        return -1.0;
      }
      EXPECT_EQ(r->out.find("\"pooled\":true") != std::string::npos, want_pooled) << r->out;
      wall.push_back(r->wall_ms);
    }
    std::sort(wall.begin(), wall.end());
    return (wall[9] + wall[10]) / 2;
  };
  const std::string curl = "curl -sS -m 20 -o /dev/null " + Url("allowed.test");
  double pooled_true = median_ms(socket_, "true", true);
  double cold_true = median_ms("off", "true", false);
  double pooled_curl = median_ms(socket_, curl, true);
  double cold_curl = median_ms("off", curl, false);
  std::printf(
      "[ figures  ] corral run --json, network allowlist, median of 20 (ms): "
      "`true` pooled %.1f, cold %.1f; one curl through the proxy pooled %.1f, "
      "cold %.1f\n",
      pooled_true, cold_true, pooled_curl, cold_curl);
}

}  // namespace
}  // namespace corral::test
