// network.mode allowlist end to end, through the corral binary: a real origin server on the
// host's 127.0.0.1 (tests/integration/data/net_origin.py), names mapped to it with
// unsafe.network_resolve (the test-only override), and real clients in the jail — curl
// through the HTTP proxy, CONNECT and SOCKS5, python's plain socket through the resolver,
// pip download from a local index. Nothing leaves this machine: every name the jail may
// reach resolves to 127.0.0.1, and every other name does not resolve at all.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/support/jail_test.h"
#include "tests/support/loopback.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

using nlohmann::json;

// Is a corral-netproxy serving sandbox `name` running (it is detached: not our child)?
bool ProxyRunningFor(const std::string& name) {
  const std::string needle = std::string("--sandbox") + '\0' + name + '\0';
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find("corral-netproxy") != std::string::npos &&
        cmdline.find(needle) != std::string::npos) {
      return true;
    }
  }
  return false;
}

class NetAllowlistTest : public JailTest {
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
    const std::string allow =
        "network:\n"
        "  mode: allowlist\n"
        "  allow: [\"allowed.test:" +
        p + "\", \"pypi.test:" + p + "\", \"*.wild.test:" + p +
        "\"]\n"
        "  deny: [\"bad.wild.test\"]\n"
        "unsafe:\n"
        "  network_resolve: {allowed.test: 127.0.0.1, pypi.test: 127.0.0.1,\n"
        "                    denied.test: 127.0.0.1, a.wild.test: 127.0.0.1,\n"
        "                    bad.wild.test: 127.0.0.1}\n";
    WriteConfig("allow.yaml", allow);
    // The namespace alone (Landlock's TCP fence would answer EACCES before the routing).
    WriteConfig("allow-namespace-only.yaml", allow + "landlock: {tcp: false}\n");
    WriteConfig("none.yaml", "network:\n  mode: none\n");
  }

  void TearDown() override {
    if (origin_ > 0) {
      ::kill(origin_, SIGKILL);
      ::waitpid(origin_, nullptr, 0);
    }
    JailTest::TearDown();
  }

  void WriteConfig(const std::string& name, const std::string& text) {
    std::ofstream(dir_.Join(name)) << text;
  }

  // `corral run --json --config <config> -- bash -c <script>`: the outcome object.
  json Run(const std::string& script, const std::string& config = "allow.yaml") {
    RunOptions options;
    options.env = {"CORRAL_RUNTIME_DIR=" + dir_.Join("run")};
    options.timeout = std::chrono::seconds(120);
    auto r = RunCorral(
        {"run", "--json", "--config", dir_.Join(config), "--", "/bin/bash", "-c", script}, options);
    EXPECT_TRUE(r) << r.error().message();
    if (!r) return json::object();
    json outcome = json::parse(r->out, nullptr, false);
    EXPECT_TRUE(outcome.is_object()) << r->Describe();
    return outcome.is_object() ? outcome : json::object();
  }
  static std::string Out(const json& o) { return o.value("stdout", ""); }
  std::string Url(const std::string& host, const std::string& path = "/hello") const {
    return "http://" + host + ":" + std::to_string(port_) + path;
  }

  TempDir dir_;
  uint16_t port_ = 0;
  pid_t origin_ = -1;
};

TEST_F(NetAllowlistTest, AllowedNameThroughHttpConnectAndSocks) {
  json o = Run("curl -sS -m 20 " + Url("allowed.test") + " && " + "curl -sS -m 20 -p " +
               Url("allowed.test") + " && " +  // -p: CONNECT tunnel
               "env -u http_proxy -u HTTP_PROXY curl -sS -m 20 --socks5-hostname 127.0.0.1:1080 " +
               Url("allowed.test") + " && curl -sS -m 20 " + Url("a.wild.test"));
  EXPECT_EQ(o.value("exit_code", -1), 0) << o.dump();
  std::string hello = "hello from origin\n";
  EXPECT_EQ(Out(o), hello + hello + hello + hello) << o.dump();
  ASSERT_TRUE(o.contains("network")) << o.dump();
  EXPECT_EQ(o["network"].value("mode", ""), "allowlist");
  EXPECT_GE(o["network"].value("allowed", 0), 4) << o["network"].dump();
  EXPECT_EQ(o["network"].value("denied_count", -1), 0) << o["network"].dump();
}

TEST_F(NetAllowlistTest, PlainTcpClientThroughTheResolver) {
  // No proxy settings read: the name resolves (corral's resolver) to an address on the
  // jail's loopback where corral captures the connection for allowed.test:<port>.
  json o =
      Run("python3 -c \"import socket; s = socket.create_connection(('allowed.test', " +
          std::to_string(port_) +
          "), timeout=20); s.sendall(b'GET /hello HTTP/1.0\\r\\nHost: allowed.test\\r\\n\\r\\n'); "
          "d = b''\nwhile True:\n  c = s.recv(4096)\n  if not c: break\n  d += c\n"
          "print(d.decode().split('\\r\\n\\r\\n', 1)[1], end='')\"");
  EXPECT_EQ(o.value("exit_code", -1), 0) << o.dump();
  EXPECT_EQ(Out(o), "hello from origin\n") << o.dump();
}

TEST_F(NetAllowlistTest, RefusedNamesAndAddressesAreLoggedWithAReason) {
  json o = Run(
      "curl -s -o /dev/null -w '%{http_code}\\n' " + Url("denied.test") + "; " +
      "curl -s -D - -o /dev/null " + Url("bad.wild.test") +
      " | tr -d '\\r' | grep -i '^x-corral-denied'; " +
      "curl -s -o /dev/null -w '%{http_code}\\n' http://169.254.169.254/latest/meta-data/; " +
      // NO_PROXY keeps the jail's own loopback direct; through the proxy, the host's is refused.
      "curl -s -o /dev/null -w '%{http_code}\\n' --noproxy '' -x http://127.0.0.1:3128 " +
      Url("127.0.0.1") + "; " +
      "env -u http_proxy -u HTTP_PROXY curl -s -o /dev/null -w '%{http_code}\\n' --socks5-hostname "
      "127.0.0.1:1080 " +
      Url("denied.test") + "; echo socks=$?; " +
      "getent hosts unknown.test; echo getent=$?; getent hosts denied.test; echo getent=$?");
  std::string out = Out(o);
  EXPECT_NE(out.find("403\n"), std::string::npos) << out;
  EXPECT_NE(out.find("X-Corral-Denied: denied by 'bad.wild.test'"), std::string::npos) << out;
  EXPECT_EQ(out.find("hello"), std::string::npos) << out;
  // denied.test, metadata, IP literal: three 403s from the HTTP proxy.
  size_t n403 = 0;
  for (size_t at = out.find("403\n"); at != std::string::npos; at = out.find("403\n", at + 1))
    ++n403;
  EXPECT_EQ(n403, 3u) << out;
  EXPECT_NE(out.find("socks=97"), std::string::npos) << out;            // curl: SOCKS5 refused
  EXPECT_NE(out.find("getent=2\ngetent=2"), std::string::npos) << out;  // not found, both
  ASSERT_TRUE(o.contains("network")) << o.dump();
  std::string denied = o["network"]["denied"].dump();
  for (const char* host :
       {"denied.test", "bad.wild.test", "169.254.169.254", "127.0.0.1", "unknown.test"}) {
    EXPECT_NE(denied.find(host), std::string::npos) << host << " not in " << denied;
  }
  // The operator's log has the same decisions, one JSON object per line.
  std::ifstream log(dir_.Join("run/network.jsonl"));
  std::string line, all;
  size_t lines = 0;
  while (std::getline(log, line)) {
    json entry = json::parse(line, nullptr, false);
    EXPECT_TRUE(entry.is_object()) << line;
    all += line + "\n";
    ++lines;
  }
  EXPECT_GE(lines, 5u);
  EXPECT_NE(all.find("\"decision\":\"deny\""), std::string::npos) << all;
  EXPECT_NE(all.find("denied.test"), std::string::npos) << all;
}

TEST_F(NetAllowlistTest, NothingElseLeavesTheJail) {
  // UDP and raw sockets never reach the proxy: the namespace has no route but loopback.
  const std::string py =
      "python3 -c \"import socket, errno\n"
      "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
      "try:\n  u.sendto(b'x', ('8.8.8.8', 53)); print('udp sent')\n"
      "except OSError as e: print('udp', errno.errorcode[e.errno])\n"
      "try:\n  socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print('raw "
      "ok')\n"
      "except OSError as e: print('raw', errno.errorcode[e.errno])\n"
      "try:\n  socket.create_connection(('10.0.0.1', 80), timeout=3); print('tcp ok')\n"
      "except OSError as e: print('tcp', errno.errorcode.get(e.errno, e))\"";
  json allow = Run(py, "allow-namespace-only.yaml");
  EXPECT_EQ(Out(allow), "udp ENETUNREACH\nraw EPERM\ntcp ENETUNREACH\n") << allow.dump();
  // With Landlock's TCP fence (the default) port 80 is not among the allowed ports.
  json fenced = Run(py);
  EXPECT_EQ(Out(fenced), "udp ENETUNREACH\nraw EPERM\ntcp EACCES\n") << fenced.dump();
  json none = Run(py + "; curl -s -m 5 -o /dev/null " + Url("allowed.test") + "; echo curl=$?",
                  "none.yaml");
  EXPECT_NE(Out(none).find("udp ENETUNREACH\nraw EPERM\ntcp ENETUNREACH\n"), std::string::npos)
      << none.dump();
  EXPECT_EQ(Out(none).find("curl=0"), std::string::npos) << none.dump();
  EXPECT_FALSE(none.contains("network")) << none.dump();
}

TEST_F(NetAllowlistTest, PipDownloadFromAnAllowedIndex) {
  json o =
      Run("python3 -m pip download --no-cache-dir --no-deps --disable-pip-version-check "
          "--index-url " +
          Url("pypi.test", "/simple") +
          " --trusted-host pypi.test "
          "-d /tmp/dl demo-pkg >/dev/null 2>/tmp/err || cat /tmp/err; ls /tmp/dl");
  EXPECT_EQ(Out(o), "demo_pkg-1.0-py3-none-any.whl\n") << o.dump();
}

TEST_F(NetAllowlistTest, PersistentSandboxKeepsItsProxyUntilRemoved) {
  RunOptions options;
  options.env = {"CORRAL_RUNTIME_DIR=" + dir_.Join("run")};
  const std::string name = "net-" + std::to_string(::getpid());
  auto created =
      RunCorral({"create", "--name", name, "--config", dir_.Join("allow.yaml")}, options);
  ASSERT_TRUE(created && created->exit_code == 0) << (created ? created->Describe() : "");
  auto first =
      RunCorral({"exec", name, "--", "curl", "-sS", "-m", "20", Url("allowed.test")}, options);
  auto denied = RunCorral({"exec", name, "--", "curl", "-s", "-o", "/dev/null", "-w",
                           "%{http_code}", Url("denied.test")},
                          options);
  std::string summary_path = dir_.Join("run/network/" + name + ".json");
  std::this_thread::sleep_for(
      std::chrono::milliseconds(1500));  // the summary is rewritten each second
  std::ifstream summary_file(summary_path);
  json summary = json::parse(summary_file, nullptr, false);
  auto stats = RunCorral({"stats", "--json", name}, options);
  auto removed = RunCorral({"rm", name}, options);
  ASSERT_TRUE(stats);
  json stats_json = json::parse(stats->out, nullptr, false);
  ASSERT_TRUE(stats_json.is_object()) << stats->Describe();
  EXPECT_EQ(stats_json["network"].value("denied_count", 0), 1) << stats->Describe();
  EXPECT_GE(stats_json["network"].value("allowed", 0), 1) << stats->Describe();
  ASSERT_TRUE(first && denied && removed);
  EXPECT_EQ(first->out, "hello from origin\n") << first->Describe();
  EXPECT_EQ(denied->out, "403") << denied->Describe();
  EXPECT_EQ(removed->exit_code, 0) << removed->Describe();
  ASSERT_TRUE(summary.is_object()) << summary_path;
  EXPECT_GE(summary.value("allowed", 0), 1) << summary.dump();
  EXPECT_EQ(summary.value("denied_count", 0), 1) << summary.dump();
  // The proxy ends with the sandbox and leaves no summary behind.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::access(summary_path.c_str(), F_OK) != 0 && !ProxyRunningFor(name);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(gone) << "the proxy of " << name << " or its summary is still there after rm";
}

// Each sandbox has its own proxy with its own policy; one sandbox flooding its proxy leaves
// another's requests answered (their latency during the flood is printed, not asserted).
TEST_F(NetAllowlistTest, TwoSandboxesHaveIndependentPoliciesAndFloods) {
  const std::string p = std::to_string(port_);
  WriteConfig("only-pypi.yaml", "network:\n  mode: allowlist\n  allow: [\"pypi.test:" + p +
                                    "\"]\nunsafe:\n  network_resolve: {allowed.test: 127.0.0.1, "
                                    "pypi.test: 127.0.0.1}\n");
  RunOptions options;
  options.env = {"CORRAL_RUNTIME_DIR=" + dir_.Join("run")};
  const std::string a = "neta-" + std::to_string(::getpid());
  const std::string b = "netb-" + std::to_string(::getpid());
  auto ca = RunCorral({"create", "--name", a, "--config", dir_.Join("allow.yaml")}, options);
  auto cb = RunCorral({"create", "--name", b, "--config", dir_.Join("only-pypi.yaml")}, options);
  ASSERT_TRUE(ca && ca->exit_code == 0 && cb && cb->exit_code == 0)
      << (ca ? ca->Describe() : "") << (cb ? cb->Describe() : "");
  auto code = [&](const std::string& sandbox, const std::string& host) {
    auto r = RunCorral({"exec", sandbox, "--", "curl", "-s", "-o", "/dev/null", "-w",
                        "%{http_code}", "-m", "20", Url(host)},
                       options);
    return r ? r->out : std::string("no run");
  };
  EXPECT_EQ(code(a, "allowed.test"), "200");
  EXPECT_EQ(code(b, "allowed.test"), "403");  // not on b's list
  EXPECT_EQ(code(b, "pypi.test"), "200");

  // a: 8 parallel downloads of 400 MiB through its proxy, in the background.
  std::vector<std::string> flood = {CorralBinary(),
                                    "exec",
                                    a,
                                    "--",
                                    "/bin/bash",
                                    "-c",
                                    "for i in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null -m 60 '" +
                                        Url("allowed.test", "/big?mb=400") + "' & done; wait"};
  ::setenv("CORRAL_RUNTIME_DIR", dir_.Join("run").c_str(), 1);
  auto flooding = StartProgram(flood);
  ::unsetenv("CORRAL_RUNTIME_DIR");
  ASSERT_TRUE(flooding) << flooding.error().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // b meanwhile: 10 small requests, each answered.
  auto during = RunCorral({"exec", b, "--", "/bin/bash", "-c",
                           "for i in $(seq 10); do curl -s -o /dev/null -m 20 -w '%{http_code} "
                           "%{time_total}\\n' " +
                               Url("pypi.test") + "; done"},
                          options);
  int status = 0;
  ::waitpid(*flooding, &status, 0);
  ASSERT_TRUE(during);
  std::istringstream lines(during->out);
  std::vector<double> times;
  for (std::string c, t; lines >> c >> t;) {
    EXPECT_EQ(c, "200") << during->Describe();
    times.push_back(std::stod(t) * 1000);
  }
  EXPECT_EQ(times.size(), 10u) << during->Describe();
  std::sort(times.begin(), times.end());
  if (!times.empty()) {
    std::printf(
        "[ figures  ] sandbox b's small requests while sandbox a floods its proxy: median %.2f ms, "
        "max %.2f ms (n=%zu)\n",
        times[times.size() / 2], times.back(), times.size());
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the flood's exec ended with " << status;
  auto ra = RunCorral({"rm", a}, options);
  auto rb = RunCorral({"rm", b}, options);
  EXPECT_TRUE(ra && ra->exit_code == 0 && rb && rb->exit_code == 0);
}

}  // namespace
}  // namespace corral::test
