// The network allow-list through the daemon: a sandbox created over corral's API with
// spec.network reaches an allowed origin, and never the daemon's own address, even when
// a rule names it. A real `corral serve` on loopback; the names resolve to 127.0.0.1 through
// the daemon config's unsafe.network_resolve (the test-only override), so nothing leaves
// this machine. Root only; leak-checked.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/serve_fixture.h"
#include "tests/support/loopback.h"

namespace corral::test {
namespace {

using nlohmann::json;

class ServeNetworkTest : public ServeTest {
 protected:
  void SetUp() override {
    ServeTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    origin_port_ = FreeLoopbackPort();
    auto pid =
        StartProgram({"/usr/bin/python3", SourceDir() + "/tests/integration/data/net_origin.py",
                      std::to_string(origin_port_)});
    ASSERT_TRUE(pid) << pid.error().message();
    origin_ = *pid;
    ASSERT_TRUE(WaitForLoopbackListener(origin_port_)) << "the origin server did not start";
  }
  void TearDown() override {
    if (origin_ > 0) {
      ::kill(origin_, SIGKILL);
      ::waitpid(origin_, nullptr, 0);
    }
    ServeTest::TearDown();
  }

  HttpAnswer Exec(const std::string& name, const std::string& command) {
    return Curl("POST", Url("/api/corral/v1/sandboxes/" + name + "/exec"), "", {}, true,
                {"--data-binary", json{{"command", command}}.dump()});
  }

  uint16_t origin_port_ = 0;
  pid_t origin_ = -1;
};

TEST_F(ServeNetworkTest, AllowListSandboxReachesItsOriginButNeverTheDaemon) {
  StartDaemon(Config() +
              "unsafe:\n  network_resolve: {origin.test: 127.0.0.1, api.test: 127.0.0.1}\n");
  const std::string origin = "origin.test:" + std::to_string(origin_port_);
  // A rule for the daemon's own name and port: the proxy still refuses it.
  const std::string daemon = "api.test:" + std::to_string(port_);
  json spec = {{"network", {{"mode", "allowlist"}, {"allow", {origin, daemon}}}}};
  auto created = Api("POST", "/api/corral/v1/sandboxes",
                     json{{"name", "net1"}, {"spec", spec}, {"idle_timeout", 0}}.dump());
  ASSERT_EQ(created.status, 201) << created.body << DaemonLog();

  auto reached = Exec("net1", "curl -sS --max-time 20 http://" + origin + "/hello");
  ASSERT_EQ(reached.status, 200) << reached.body;
  EXPECT_EQ(reached.Json()["stdout"], "hello from origin\n") << reached.body;

  // Through the HTTP proxy and through CONNECT: both refused by the proxy (403), never
  // answered by the daemon (whose /health would say 200).
  for (const std::string flags : {"", "-p "}) {
    auto refused = Exec("net1", "curl -sS " + flags +
                                    "--max-time 20 -o /dev/null -w '%{http_code}' "
                                    "http://" +
                                    daemon + "/health; echo \" rc=$?\"");
    ASSERT_EQ(refused.status, 200) << refused.body;
    const std::string out = refused.Json()["stdout"];
    EXPECT_EQ(out.find("200"), std::string::npos) << flags << out;
  }
  // The decision and its reason are in the operator's log.
  std::ifstream log(dir_.Join("run/network.jsonl"));
  std::string line, denials;
  while (std::getline(log, line)) {
    if (line.find("\"decision\":\"deny\"") != std::string::npos) denials += line + "\n";
  }
  EXPECT_NE(denials.find("corral's own API address"), std::string::npos) << denials;
  EXPECT_NE(denials.find("api.test"), std::string::npos) << denials;

  // The sandbox's info carries the proxy's summary, which the proxy rewrites about once a
  // second: the refusals counted.
  HttpAnswer info;
  for (int i = 0; i < 100; ++i) {
    info = Api("GET", "/api/corral/v1/sandboxes/net1");
    ASSERT_EQ(info.status, 200) << info.body;
    ASSERT_TRUE(info.Json().contains("network")) << info.body;
    if (info.Json()["network"].value("denied_count", 0) >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(info.Json()["network"].value("denied_count", 0), 2) << info.body;
  EXPECT_EQ(info.Json()["network"].value("allowed", 0), 1) << info.body;
  EXPECT_EQ(Api("DELETE", "/api/corral/v1/sandboxes/net1").status, 200);
}

}  // namespace
}  // namespace corral::test
