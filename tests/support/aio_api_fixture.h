// The fixture of the AIO API tests (server/aio/api.h): a real persistent sandbox in a
// temporary runtime directory, with a user-data directory (workspace, uploads, outputs),
// and an AioApi driven directly through Handle (no HTTP). TearDown destroys the API (its
// session shells end) and removes the sandbox; the leak check then proves nothing is left.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/sandboxes/persistent.h"
#include "server/aio/api.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {

struct AioAnswer {
  int status = 0;
  nlohmann::json body;  // parsed when the answer is JSON
  std::string raw;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
  const nlohmann::json& data() const { return body["data"]; }
};

class AioApiTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ::setenv("CORRAL_RUNTIME_DIR", dir_.Join("run").c_str(), 1);
    for (const char* d :
         {"user-data", "user-data/workspace", "user-data/uploads", "user-data/outputs"}) {
      ASSERT_TRUE(dir_.MakeDirs(d, 0777));
      ASSERT_EQ(::chmod(dir_.Join(d).c_str(), 0777), 0);
    }
    name_ = "aio-test-" + std::to_string(::getpid());
    runtime::CreateRequest req;
    req.name = name_;
    req.spec.user_data_dir = dir_.Join("user-data");
    // DeerFlow's agents start servers on localhost and query them from later calls: the
    // documented opt-out from Landlock's TCP fence (README.md, "Landlock").
    req.spec.landlock.tcp = false;
    auto rec = runtime::CreateSandbox(req);
    ASSERT_TRUE(rec) << rec.error().message();
    created_ = true;
    api_ = std::make_unique<server::AioApi>(server::AioApiOptions{});
    ref_ = {"sbx0123456789abc", name_};
  }

  void TearDown() override {
    api_.reset();
    if (created_) {
      EXPECT_TRUE(runtime::RemoveSandbox(name_));
    }
    ::unsetenv("CORRAL_RUNTIME_DIR");
    JailTest::TearDown();
  }

  AioAnswer Call(const std::string& method, const std::string& subpath, const std::string& body,
                 const server::AioSandboxRef* ref = nullptr,
                 std::multimap<std::string, std::string> query = {}) {
    server::HttpRequest req;
    req.method = method;
    req.path = "/sandboxes/x/token/" + subpath;
    req.query = std::move(query);
    req.headers["content-type"] = "application/json";
    req.body = body;
    auto promise = std::make_shared<std::promise<server::HttpResponse>>();
    auto future = promise->get_future();
    api_->Handle(ref ? *ref : ref_, subpath, std::move(req),
                 [promise](server::HttpResponse r) { promise->set_value(std::move(r)); });
    AioAnswer a;
    if (future.wait_for(std::chrono::seconds(90)) != std::future_status::ready) {
      ADD_FAILURE() << method << " " << subpath << " got no answer in 90 s";
      a.body = nlohmann::json::object();  // callers read fields of it: fail, never throw
      return a;
    }
    server::HttpResponse r = future.get();
    a.status = r.status;
    a.raw = r.body;
    a.content_type = r.content_type;
    a.headers = r.headers;
    if (r.content_type == "application/json") {
      a.body = nlohmann::json::parse(r.body, nullptr, false);
      EXPECT_FALSE(a.body.is_discarded()) << r.body;
    }
    return a;
  }
  AioAnswer Post(const std::string& subpath, const nlohmann::json& body) {
    return Call("POST", subpath, body.dump());
  }
  // shell/exec's data.output for `command` (in session `id` when given).
  std::string Shell(const std::string& command, const std::string& id = "") {
    nlohmann::json body = {{"command", command}, {"no_change_timeout", 600}};
    if (!id.empty()) body["id"] = id;
    AioAnswer a = Post("v1/shell/exec", body);
    EXPECT_EQ(a.status, 200) << a.raw;
    EXPECT_EQ(a.body.value("success", false), true) << a.raw;
    const auto& out = a.body["data"]["output"];
    return out.is_string() ? out.get<std::string>() : "<" + a.raw + ">";
  }

  TempDir dir_;
  std::string name_;
  bool created_ = false;
  std::unique_ptr<server::AioApi> api_;
  server::AioSandboxRef ref_;
};

}  // namespace corral::test
