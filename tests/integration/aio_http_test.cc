// The AIO API black-box over real HTTP: a `corral serve` on loopback, a sandbox from the
// provisioner API, and python's http.client speaking DeerFlow's requests to its
// sandbox_url (tests/integration/data/aio_http_client.py).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/integration/serve_fixture.h"
#include "tests/support/run_corral.h"

namespace corral::test {
namespace {

TEST_F(ServeTest, AioApiOverHttpWithDeerFlowsRequests) {
  // The client starts a server on the sandbox's localhost and queries it from a later call,
  // with the defaults (network none: the sandbox's own loopback, open under Landlock).
  StartDaemon(Config());
  auto created = Api("POST", "/api/sandboxes", CreateBody("aiohttp01", "t-http"));
  ASSERT_EQ(created.status, 200) << created.body << DaemonLog();
  const std::string url = created.Json()["sandbox_url"];
  RunOptions options;
  options.timeout = std::chrono::seconds(240);
  auto r = RunProgram("/usr/bin/python3",
                      {SourceDir() + "/tests/integration/data/aio_http_client.py", url}, options);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe() << DaemonLog();
  EXPECT_NE(r->out.find("ALL OK"), std::string::npos) << r->out;
  for (size_t at = r->out.find("[figure]"); at != std::string::npos;
       at = r->out.find("[figure]", at + 1)) {
    std::printf("%s\n", r->out.substr(at, r->out.find('\n', at) - at).c_str());
  }
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/aiohttp01").status, 200);
}

}  // namespace
}  // namespace corral::test
