// `corral serve` black-box: a real daemon on loopback, real HTTP (curl, raw sockets), real
// persistent sandboxes. The provisioner flow, auth, tokens, Host checks, bad input, limits,
// restart adoption after kill -9, and SIGTERM. Root only; leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <filesystem>
#include <set>
#include <thread>

#include "runtime/sandboxes/persistent.h"
#include "server/http/listen_address.h"
#include "tests/integration/serve_fixture.h"
#include "tests/support/processes.h"

namespace corral::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

TEST_F(ServeTest, ProvisionerFlow) {
  StartDaemon(Config());
  EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).body, R"({"status":"ok"})");
  auto caps = Api("GET", "/api/capabilities");
  EXPECT_EQ(caps.status, 200);
  EXPECT_EQ(caps.Json(), json({{"lark_cli_init_image", false}, {"lark_cli_broker_image", false}}));

  auto created = Api("POST", "/api/sandboxes", CreateBody("abc123", "t1"));
  ASSERT_EQ(created.status, 200) << created.body << DaemonLog();
  json c = created.Json();
  EXPECT_EQ(c["sandbox_id"], "abc123");
  EXPECT_EQ(c["status"], "Running");
  const std::string url = c["sandbox_url"];
  const std::string prefix = Url("/sandboxes/abc123/");
  ASSERT_EQ(url.rfind(prefix, 0), 0u) << url;
  EXPECT_GE(url.size() - prefix.size(), 32u) << "a token of at least 128 bits";

  // Idempotent: the same sandbox and URL again.
  auto again = Api("POST", "/api/sandboxes", CreateBody("abc123", "t1"));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.Json()["sandbox_url"], url);
  auto got = Api("GET", "/api/sandboxes/abc123");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.Json(), c);
  auto list = Api("GET", "/api/sandboxes");
  EXPECT_EQ(list.Json(), json({{"sandboxes", json::array({c})}, {"count", 1}}));

  // A corral persistent sandbox the CLI sees, with the thread's user-data mounted.
  auto info = runtime::InspectSandbox("df-abc123");
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_TRUE(info->alive);
  EXPECT_EQ(info->record.spec.user_data_dir, dir_.Join("base/users/default/threads/t1/user-data"));
  EXPECT_EQ(Curl("GET", url + "/v1/sandbox", "", {}, false).status, 200);

  EXPECT_EQ(Api("DELETE", "/api/sandboxes/abc123").Json(),
            json({{"ok", true}, {"sandbox_id", "abc123"}}));
  auto gone = Api("GET", "/api/sandboxes/abc123");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.Json(), json({{"detail", "Sandbox 'abc123' not found"}}));
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/abc123").status, 200) << "delete is idempotent";
  EXPECT_FALSE(runtime::InspectSandbox("df-abc123"));
  EXPECT_EQ(Curl("GET", url + "/v1/sandbox", "", {}, false).status, 404);
  EXPECT_EQ(Api("GET", "/api/sandboxes").Json()["count"], 0);

  // The access log names route templates, never the token.
  std::ifstream in(dir_.Join("access.log"));
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(log.str().find("\"route\":\"/sandboxes/{id}/{token}/v1/sandbox\""), std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find(url.substr(prefix.size())), std::string::npos) << "token in the log";
}

// Creates of different sandbox_ids run at once; creates of one id take turns and stay
// idempotent (the same URL for every caller, one corral sandbox).
TEST_F(ServeTest, ConcurrentCreatesAreIdempotentPerId) {
  StartDaemon(Config());
  constexpr int kCallers = 6;
  std::vector<std::string> same(kCallers), distinct(kCallers);
  std::vector<int> same_status(kCallers), distinct_status(kCallers);
  auto create = [&](const std::string& id, const std::string& thread) {
    // The body inline: the fixture's Api writes bodies to one shared file.
    return Curl("POST", Url("/api/sandboxes"), "", {"Content-Type: application/json"}, true,
                {"--data-binary", CreateBody(id, thread)});
  };
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      auto a = create("same1", "t-same");
      same_status[i] = a.status;
      if (a.status == 200) same[i] = a.Json()["sandbox_url"];
    });
    callers.emplace_back([&, i] {
      auto a = create("many" + std::to_string(i), "t-many" + std::to_string(i));
      distinct_status[i] = a.status;
      if (a.status == 200) distinct[i] = a.Json()["sandbox_url"];
    });
  }
  for (auto& t : callers) t.join();
  for (int i = 0; i < kCallers; ++i) {
    EXPECT_EQ(same_status[i], 200) << DaemonLog();
    EXPECT_EQ(same[i], same[0]) << "one sandbox, one URL, whoever created it";
    EXPECT_EQ(distinct_status[i], 200) << DaemonLog();
  }
  EXPECT_EQ(std::set<std::string>(distinct.begin(), distinct.end()).size(), size_t{kCallers});
  EXPECT_EQ(Api("GET", "/api/sandboxes").Json()["count"], kCallers + 1);
  auto ps = RunCorral({"ps"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  EXPECT_NE(ps->out.find("df-same1"), std::string::npos) << ps->out;
  for (int i = 0; i < kCallers; ++i) {
    auto shell =
        Curl("POST", distinct[i] + "/v1/shell/exec", "", {"Content-Type: application/json"}, false,
             {"--data-binary", R"({"command":"echo ok"})"});
    EXPECT_EQ(shell.Json()["data"]["output"], "ok\n") << shell.body;
  }
  for (int i = 0; i < kCallers; ++i) {
    EXPECT_EQ(Api("DELETE", "/api/sandboxes/many" + std::to_string(i)).status, 200);
  }
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/same1").status, 200);
}

TEST_F(ServeTest, EveryApiPathNeedsTheKey) {
  StartDaemon(Config());
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/api/sandboxes"},
                                                        {"POST", "/api/sandboxes"},
                                                        {"GET", "/api/capabilities"},
                                                        {"DELETE", "/api/sandboxes/x"},
                                                        {"GET", "/api/nope"},
                                                        {"PATCH", "/api/sandboxes"},
                                                        {"GET", "/api"}}) {
    auto none = Curl(method, Url(path), "", {}, false);
    EXPECT_EQ(none.status, 401) << method << " " << path;
    EXPECT_EQ(none.body, "Unauthorized");
    auto wrong = Curl(method, Url(path), "", {"X-API-Key: test-key-7f3a9c2e5b1d4f61"}, false);
    EXPECT_EQ(wrong.status, 401) << method << " " << path;
  }
  EXPECT_EQ(Api("GET", "/api/nope").status, 404);
  EXPECT_EQ(Curl("GET", Url("/metrics"), "", {}, false).status, 401);
  auto metrics = Api("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("corral_sandboxes{state=\"running\"} 0"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("corral_http_request_duration_seconds_bucket"), std::string::npos);
}

TEST_F(ServeTest, TokensAreTheCredentialOfSandboxRoutes) {
  StartDaemon(Config());
  auto created = Api("POST", "/api/sandboxes", CreateBody("tok1", "t-tok"));
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  const std::string token = url.substr(url.rfind('/') + 1);
  std::string wrong = token;
  wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
  auto unknown = Curl("GET", Url("/sandboxes/nosuch/" + token + "/v1/sandbox"), "", {}, false);
  auto bad = Curl("GET", Url("/sandboxes/tok1/" + wrong + "/v1/sandbox"), "", {}, false);
  auto missing = Curl("GET", Url("/sandboxes/tok1"), "", {}, false);
  auto short_token =
      Curl("GET", Url("/sandboxes/tok1/" + token.substr(0, 8) + "/v1/sandbox"), "", {}, false);
  EXPECT_EQ(unknown.status, 404);
  for (const auto* a : {&bad, &missing, &short_token}) {
    EXPECT_EQ(a->status, unknown.status);
    EXPECT_EQ(a->body, unknown.body) << "no existence oracle";
  }
  EXPECT_EQ(unknown.Json(), json({{"detail", "Not Found"}}));
  EXPECT_EQ(Curl("GET", url + "/v1/sandbox", "", {}, false).status, 200);
  // The API key opens a sandbox's routes too.
  EXPECT_EQ(Curl("GET", Url("/sandboxes/tok1/" + wrong + "/v1/sandbox")).status, 200);
  // No CORS, ever.
  auto r = RunProgram("/usr/bin/curl",
                      {"-sS", "-i", "-H", "Origin: http://evil.example", url + "/v1/sandbox"});
  ASSERT_TRUE(r);
  EXPECT_EQ(server::ToLower(r->out).find("access-control-"), std::string::npos) << r->out;
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/tok1").status, 200);
}

TEST_F(ServeTest, HostHeaderMustNameTheServer) {
  StartDaemon(Config());
  auto foreign = Curl("GET", Url("/health"), "", {"Host: evil.example:" + std::to_string(port_)});
  EXPECT_EQ(foreign.status, 421) << foreign.body;
  EXPECT_NE(foreign.body.find("Host"), std::string::npos);
  EXPECT_EQ(
      Curl("POST", Url("/api/sandboxes"), CreateBody("h1", "t-h"), {"Host: evil.example"}).status,
      421);
  EXPECT_EQ(Curl("GET", Url("/health"), "", {"Host: 127.0.0.1:1"}).status, 421);
  auto local = Curl("GET", Url("/health"), "", {"Host: localhost:" + std::to_string(port_)});
  EXPECT_EQ(local.status, 200);
  // The sandbox_url is built from an accepted name only.
  auto created = Curl("POST", Url("/api/sandboxes"), CreateBody("h1", "t-h"),
                      {"Host: LOCALHOST:" + std::to_string(port_)});
  ASSERT_EQ(created.status, 200) << created.body;
  EXPECT_EQ(created.Json()["sandbox_url"].get<std::string>().rfind(
                "http://localhost:" + std::to_string(port_) + "/sandboxes/h1/", 0),
            0u);
  auto none = Raw("GET /health HTTP/1.0\r\n\r\n", milliseconds(3000));
  EXPECT_NE(none.received.find(" 400 "), std::string::npos) << none.received;
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/h1").status, 200);
}

// Every face takes 404 and 405 from its route table (server/http/route_table.h): another
// method on a known path is a 405 whose Allow header names the methods the path takes.
TEST_F(ServeTest, AnotherMethodOnAKnownPathIs405NamingTheAllowedOnes) {
  StartDaemon(Config());
  struct Case {
    std::string method, path, allow;
  };
  for (const Case& c : std::vector<Case>{{"PATCH", "/api/sandboxes", "POST, GET"},
                                         {"DELETE", "/health", "GET"},
                                         {"POST", "/metrics", "GET"},
                                         {"PUT", "/api/capabilities", "GET"},
                                         {"PATCH", "/api/corral/v1/sandboxes/m1", "GET, DELETE"},
                                         {"DELETE", "/api/corral/v1/sandboxes", "GET, POST"}}) {
    auto a = Curl(c.method, Url(c.path), "", {}, true, {"-i"});
    EXPECT_EQ(a.status, 405) << c.method << " " << c.path << "\n" << a.body;
    EXPECT_NE(a.body.find("Allow: " + c.allow + "\r\n"), std::string::npos)
        << c.method << " " << c.path << "\n"
        << a.body;
  }
  EXPECT_EQ(Api("GET", "/api/sandboxes/").status, 404) << "no id: no route";
  EXPECT_EQ(Api("GET", "/api/corral/v1/nothing").status, 404);
  EXPECT_EQ(Api("GET", "/healthz").status, 404);
}

TEST_F(ServeTest, BadIdsAndBodiesAreRefusedClearly) {
  StartDaemon(Config());
  for (const std::string& path : std::vector<std::string>{
           "/api/sandboxes/a%2Fb", "/api/sandboxes/a/b", "/api/sandboxes/%00x",
           "/api/sandboxes/" + std::string(200, 'a'), "/api/sandboxes/a%20b"}) {
    auto r = Api("GET", path);
    EXPECT_EQ(r.status, 400) << path << " " << r.body;
    EXPECT_TRUE(r.Json().contains("detail")) << r.body;
  }
  auto dots = Curl("GET", Url("/api/sandboxes/.."), "", {}, true, {"--path-as-is"});
  EXPECT_EQ(dots.status, 400) << dots.body;
  for (const std::string& body :
       {std::string("{not json"), std::string("[]"), std::string(R"({"thread_id":"t"})"),
        std::string(R"({"sandbox_id":5})"), std::string(R"({"sandbox_id":"a/b"})"),
        std::string(R"({"sandbox_id":"..","thread_id":"t"})"),
        std::string(R"({"sandbox_id":"a\u0000b"})"),
        json({{"sandbox_id", std::string(200, 'x')}}).dump(),
        std::string(R"({"sandbox_id":"ok","thread_id":7})"),
        std::string(R"({"sandbox_id":"ok","thread_id":"../x"})"),
        std::string(R"({"sandbox_id":"ok","user_id":"a b"})"),
        std::string(R"({"sandbox_id":"ok","extra_mounts":{}})")}) {
    auto r = Api("POST", "/api/sandboxes", body);
    EXPECT_EQ(r.status, 422) << body << " -> " << r.body;
    EXPECT_TRUE(r.Json()["detail"].is_array()) << r.body;
  }
  const std::string base = dir_.Join("base");
  for (const auto& [mount, why] : std::vector<std::pair<json, std::string>>{
           {{{"host_path", base}, {"container_path", "/etc"}}, "not allowed"},
           {{{"host_path", "rel"}, {"container_path", "/mnt/acp-workspace"}}, "absolute"},
           {{{"host_path", "/etc"}, {"container_path", "/mnt/acp-workspace"}}, "base directory"},
           {{{"host_path", base + "/../x"}, {"container_path", "/mnt/acp-workspace"}},
            "normalized"},
           {{{"host_path", base + "/nope"},
             {"container_path", "/mnt/acp-workspace"},
             {"read_only", true}},
            "does not exist"}}) {
    json body = {{"sandbox_id", "m1"}, {"thread_id", "t"}, {"extra_mounts", json::array({mount})}};
    auto r = Api("POST", "/api/sandboxes", body.dump());
    EXPECT_EQ(r.status, 400) << mount.dump() << " -> " << r.body;
    EXPECT_NE(r.body.find(why), std::string::npos) << r.body;
  }
  json dup = {{"sandbox_id", "m1"},
              {"extra_mounts",
               json::array({{{"host_path", base}, {"container_path", "/mnt/acp-workspace"}},
                            {{"host_path", base}, {"container_path", "/mnt/acp-workspace"}}})}};
  EXPECT_EQ(Api("POST", "/api/sandboxes", dup.dump()).status, 400);
  EXPECT_EQ(Api("GET", "/api/sandboxes").Json()["count"], 0) << "nothing was created";
  EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).status, 200);
}

// A body that nests 100,000 levels deep (about 200 kB) ended the daemon with a stack
// overflow when a route copied the value. Every route that reads a body now refuses it
// with a 400 before any document exists, whether the deep value sits in a field the route
// reads or in one it ignores, and the daemon goes on serving.
TEST_F(ServeTest, DeeplyNestedBodiesAreRefusedAndTheDaemonStaysUp) {
  StartDaemon(Config());
  auto created = Api("POST", "/api/sandboxes", CreateBody("deep1", "t-deep"));
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const char* route : {"/v1/shell/exec", "/v1/bash/exec", "/v1/file/read", "/v1/file/write",
                            "/v1/file/list", "/v1/shell/sessions/create"}) {
    for (const std::string& body : {R"({"command":)" + deep + "}",
                                    R"({"command":"true","file":"/tmp/x","extra":)" + deep + "}"}) {
      auto r = Curl("POST", url + std::string(route), body, {}, false);
      EXPECT_EQ(r.status, 400) << route << " -> " << r.body.substr(0, 200);
      EXPECT_NE(r.body.find("deeper than 64 levels"), std::string::npos) << r.body.substr(0, 200);
    }
  }
  auto provision = Api("POST", "/api/sandboxes", R"({"sandbox_id":)" + deep + "}");
  EXPECT_EQ(provision.status, 400) << provision.body.substr(0, 200);
  EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).status, 200) << DaemonLog();
  auto shell =
      Curl("POST", url + "/v1/shell/exec", json({{"command", "echo alive"}}).dump(), {}, false);
  ASSERT_EQ(shell.status, 200) << shell.body;
  EXPECT_EQ(shell.Json()["data"]["output"], "alive\n");
}

// The shipped unit ran the daemon with UMask=0077: the thread directories it made were
// 0700, the jail's uid could not enter them, and every create failed with 500. The daemon
// now sets the modes of what it makes whatever its umask.
TEST_F(ServeTest, ARestrictiveUmaskStillMakesUsableThreadDirectories) {
  mode_t old = ::umask(077);
  StartDaemon(Config());
  ::umask(old);
  auto created = Api("POST", "/api/sandboxes", CreateBody("umask1", "t-umask"));
  ASSERT_EQ(created.status, 200) << created.body << DaemonLog();
  const std::string url = created.Json()["sandbox_url"];
  auto shell = Curl(
      "POST", url + "/v1/shell/exec",
      json({{"command", "echo ok > /mnt/user-data/workspace/f && cat /mnt/user-data/workspace/f"}})
          .dump(),
      {}, false);
  ASSERT_EQ(shell.status, 200) << shell.body;
  EXPECT_EQ(shell.Json()["data"]["output"], "ok\n") << shell.body;
}

// The mounts of docs/deerflow-contract.md §4: the skills views (the extra mounts
// /mnt/skills/custom and /mnt/skills/integrations, and the public/legacy views the
// provisioner derives itself) and /mnt/acp-workspace, all read-only whatever the request
// says; the thread's user-data read-write.
TEST_F(ServeTest, SkillsViewsAndAcpWorkspaceAreMountedReadOnly) {
  StartDaemon(Config());
  const std::string base = dir_.Join("base");
  for (const char* d :
       {"skills_view/public", "users/u1/skills_view/custom", "users/u1/skills_view/legacy",
        "users/u1/skills_view/integrations", "users/u1/threads/t-sk/acp-workspace"}) {
    ASSERT_TRUE(dir_.MakeDirs(std::string("base/") + d));
  }
  ASSERT_TRUE(dir_.WriteFile("base/skills_view/public/p.md", "public\n"));
  ASSERT_TRUE(dir_.WriteFile("base/users/u1/skills_view/custom/c.md", "custom\n"));
  ASSERT_TRUE(dir_.WriteFile("base/users/u1/skills_view/legacy/l.md", "legacy\n"));
  ASSERT_TRUE(dir_.WriteFile("base/users/u1/skills_view/integrations/i.md", "integrations\n"));
  ASSERT_TRUE(dir_.WriteFile("base/users/u1/threads/t-sk/acp-workspace/a.md", "acp\n"));
  json body = {
      {"sandbox_id", "sk1"},
      {"thread_id", "t-sk"},
      {"user_id", "u1"},
      {"extra_mounts", json::array({{{"host_path", base + "/users/u1/skills_view/custom"},
                                     {"container_path", "/mnt/skills/custom"},
                                     {"read_only", true}},
                                    {{"host_path", base + "/users/u1/skills_view/integrations"},
                                     {"container_path", "/mnt/skills/integrations"},
                                     {"read_only", false}},
                                    {{"host_path", base + "/users/u1/threads/t-sk/acp-workspace"},
                                     {"container_path", "/mnt/acp-workspace"},
                                     {"read_only", false}}})}};
  auto created = Api("POST", "/api/sandboxes", body.dump());
  ASSERT_EQ(created.status, 200) << created.body << DaemonLog();
  const std::string url = created.Json()["sandbox_url"];
  auto shell = [&](const std::string& command) {
    auto r = Curl("POST", url + "/v1/shell/exec", json{{"command", command}}.dump(), {}, false);
    return r.Json()["data"]["output"].get<std::string>();
  };
  EXPECT_EQ(shell("cat /mnt/skills/public/p.md /mnt/skills/custom/c.md /mnt/skills/legacy/l.md "
                  "/mnt/skills/integrations/i.md /mnt/acp-workspace/a.md"),
            "public\ncustom\nlegacy\nintegrations\nacp\n");
  for (const char* dir : {"/mnt/skills/public", "/mnt/skills/custom", "/mnt/skills/legacy",
                          "/mnt/skills/integrations", "/mnt/acp-workspace"}) {
    EXPECT_EQ(
        shell(std::string("touch ") + dir + "/new 2>/dev/null && echo writable || echo read-only"),
        "read-only\n")
        << dir;
  }
  EXPECT_EQ(shell("touch /mnt/user-data/workspace/new && echo writable"), "writable\n");
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/sk1").status, 200);
}

// The README's skills.path (bound at /mnt/skills) without custom/ in it: the view's mount
// point is made there, and DeerFlow's custom skills are seen (they were silently hidden).
TEST_F(ServeTest, SkillsViewsGetTheirMountPointsInSkillsPath) {
  ASSERT_TRUE(dir_.MakeDirs("skills/public"));
  ASSERT_TRUE(dir_.MakeDirs("base/users/u1/skills_view/custom"));
  ASSERT_TRUE(dir_.WriteFile("base/users/u1/skills_view/custom/c.md", "custom\n"));
  StartDaemon(Config() + "skills:\n  path: " + dir_.Join("skills") + "\n");
  json body = {
      {"sandbox_id", "sk2"},
      {"thread_id", "t-sk2"},
      {"user_id", "u1"},
      {"extra_mounts", json::array({{{"host_path", dir_.Join("base/users/u1/skills_view/custom")},
                                     {"container_path", "/mnt/skills/custom"},
                                     {"read_only", true}}})}};
  auto created = Api("POST", "/api/sandboxes", body.dump());
  ASSERT_EQ(created.status, 200) << created.body << DaemonLog();
  const std::string url = created.Json()["sandbox_url"];
  auto r = Curl("POST", url + "/v1/shell/exec",
                json{{"command", "cat /mnt/skills/custom/c.md; ls /mnt/skills"}}.dump(), {}, false);
  EXPECT_EQ(r.Json()["data"]["output"], "custom\ncustom\npublic\n") << r.body << DaemonLog();
  struct stat st;
  EXPECT_EQ(::stat(dir_.Join("skills/custom").c_str(), &st), 0) << "the mount point was made";
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/sk2").status, 200);
}

TEST_F(ServeTest, LimitsAndSlowClientsLeaveTheDaemonHealthy) {
  StartDaemon(Config("  max_sandboxes: 1\n"));
  // Over max_body_bytes (1m here): 413, by Content-Length before any byte of the body...
  auto big = Raw("POST /api/sandboxes HTTP/1.1\r\nHost: " + Authority() +
                     "\r\nContent-Length: 150000000\r\n\r\n",
                 milliseconds(3000));
  EXPECT_EQ(big.received.rfind("HTTP/1.1 413", 0), 0u) << big.received;
  EXPECT_TRUE(big.closed);
  // ... and through curl with a real 2 MB body.
  EXPECT_EQ(Api("POST", "/api/sandboxes", std::string(2 << 20, 'x')).status, 413);
  // Headers past 16 KiB: 431.
  auto huge = Raw("GET /health HTTP/1.1\r\nHost: " + Authority() +
                      "\r\nX-Pad: " + std::string(20000, 'p') + "\r\n\r\n",
                  milliseconds(3000));
  EXPECT_EQ(huge.received.rfind("HTTP/1.1 431", 0), 0u) << huge.received.substr(0, 200);
  // A client that never finishes its headers is cut off after header_timeout (2 s here).
  auto start = std::chrono::steady_clock::now();
  auto slow = Raw("GET /health HTTP/1.1\r\nHost: ", milliseconds(8000));
  EXPECT_TRUE(slow.closed) << "a slow client keeps its connection";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(7));
  // Garbage is a 400.
  auto junk = Raw("NOT HTTP AT ALL\r\n\r\n", milliseconds(3000));
  EXPECT_EQ(junk.received.rfind("HTTP/1.1 400", 0), 0u) << junk.received;
  // The hard cap.
  ASSERT_EQ(Api("POST", "/api/sandboxes", CreateBody("cap1", "t-cap1")).status, 200);
  auto over = Api("POST", "/api/sandboxes", CreateBody("cap2", "t-cap2"));
  EXPECT_EQ(over.status, 429) << over.body;
  EXPECT_NE(over.body.find("max_sandboxes"), std::string::npos);
  EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).status, 200);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/cap1").status, 200);
}

TEST_F(ServeTest, KillNineThenRestartAdoptsTheSandbox) {
  StartDaemon(Config());
  auto created = Api("POST", "/api/sandboxes", CreateBody("k9", "t-k9"));
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  const std::string path = url.substr(url.find("/sandboxes/"));
  auto exec = RunCorral({"exec", "df-k9", "--", "sh", "-c",
                         "echo kept > /tmp/state; echo data > /mnt/user-data/workspace/f"});
  ASSERT_TRUE(exec && exec->exit_code == 0) << (exec ? exec->Describe() : "");
  // Through the AIO API too: a file and a shell session.
  auto wrote = Curl("POST", url + "/v1/file/write",
                    json({{"file", "/tmp/aio.txt"}, {"content", "via aio"}}).dump(), {}, false);
  ASSERT_EQ(wrote.status, 200) << wrote.body;
  auto shell =
      Curl("POST", url + "/v1/shell/exec", json({{"command", "cd /tmp"}}).dump(), {}, false);
  ASSERT_EQ(shell.status, 200) << shell.body;
  const std::string session = shell.Json()["data"]["session_id"];
  const int port = port_;
  StopDaemon(SIGKILL);

  StartDaemon(Config("", port));  // the same address: the same URLs
  EXPECT_NE(DaemonLog().find("(1 sandboxes adopted)"), std::string::npos) << DaemonLog();
  auto got = Api("GET", "/api/sandboxes/k9");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.Json()["sandbox_url"], url) << "the same URL and token";
  EXPECT_EQ(Curl("GET", Url(path + "/v1/sandbox"), "", {}, false).status, 200);
  auto cat = RunCorral({"exec", "df-k9", "--", "cat", "/tmp/state", "/mnt/user-data/workspace/f"});
  ASSERT_TRUE(cat);
  EXPECT_EQ(cat->out, "kept\ndata\n");
  auto read =
      Curl("POST", url + "/v1/file/read", json({{"file", "/tmp/aio.txt"}}).dump(), {}, false);
  EXPECT_EQ(read.Json()["data"]["content"], "via aio") << read.body;
  // The session died with the old daemon: DeerFlow's "recreate the session" answer.
  auto old = Curl("POST", url + "/v1/shell/exec",
                  json({{"command", "pwd"}, {"id", session}}).dump(), {}, false);
  EXPECT_EQ(old.status, 404) << old.body;
  EXPECT_EQ(old.Json(),
            json({{"success", false}, {"message", "Session not found"}, {"data", nullptr}}));

  // A sandbox that died while no daemon ran is forgotten by the next one.
  StopDaemon(SIGKILL);
  ASSERT_TRUE(runtime::RemoveSandbox("df-k9"));
  StartDaemon(Config());
  EXPECT_EQ(Api("GET", "/api/sandboxes/k9").status, 404);
  EXPECT_EQ(Curl("GET", Url(path + "/v1/sandbox"), "", {}, false).status, 404);
}

// kill -9 of the daemon in the middle of 20 concurrent creates (DeerFlow creating
// sandboxes for 20 threads at once), then a restart: every create is then done or not
// done. Each id can be created (and answers), `corral ps` lists no sandbox the daemon
// does not know, and deleting them all leaves nothing (the fixture's leak check).
TEST_F(ServeTest, KillNineDuringConcurrentCreatesStrandsNothing) {
  StartDaemon(Config());
  constexpr int kCreates = 20;
  auto id = [](int i) { return "cc" + std::to_string(i); };
  std::vector<std::thread> callers;
  for (int i = 0; i < kCreates; ++i) {
    callers.emplace_back([&, i] {
      Curl("POST", Url("/api/sandboxes"), "", {"Content-Type: application/json"}, true,
           {"--data-binary", CreateBody(id(i), "t-" + id(i))});
    });
  }
  std::this_thread::sleep_for(milliseconds(400));
  StopDaemon(SIGKILL);
  for (auto& t : callers) t.join();

  StartDaemon(Config());
  // What the new daemon found, for the record: creates it undid or sandboxes it removed.
  size_t undone = 0;
  for (const char* mark : {"did not finish", "never recorded"}) {
    for (size_t at = DaemonLog().find(mark); at != std::string::npos;
         at = DaemonLog().find(mark, at + 1)) {
      ++undone;
    }
  }
  std::cerr << "[figure] after kill -9 during " << kCreates << " creates: " << undone
            << " half-made found and undone at restart\n";
  for (int i = 0; i < kCreates; ++i) {
    auto created = Api("POST", "/api/sandboxes", CreateBody(id(i), "t-" + id(i)));
    ASSERT_EQ(created.status, 200) << id(i) << ": " << created.body << DaemonLog();
    auto shell = Curl("POST", created.Json()["sandbox_url"].get<std::string>() + "/v1/shell/exec",
                      json({{"command", "echo ok"}}).dump(), {}, false);
    EXPECT_EQ(shell.Json()["data"]["output"], "ok\n") << id(i) << ": " << shell.body;
  }
  auto ps = RunCorral({"ps"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  for (int i = 0; i < kCreates; ++i)
    ASSERT_EQ(Api("DELETE", "/api/sandboxes/" + id(i)).status, 200);
  auto after = RunCorral({"ps"});
  ASSERT_TRUE(after && after->exit_code == 0);
  EXPECT_EQ(after->out.find("df-cc"), std::string::npos) << "left after every delete:\n"
                                                         << after->out;
}

// kill -9 of the daemon in the middle of deletes: after a restart each sandbox is there
// whole (and answers) or gone, and deleting the rest leaves nothing (leak check).
TEST_F(ServeTest, KillNineDuringDeletesLeavesEachSandboxWholeOrGone) {
  StartDaemon(Config());
  constexpr int kSandboxes = 10;
  auto id = [](int i) { return "dd" + std::to_string(i); };
  for (int i = 0; i < kSandboxes; ++i) {
    ASSERT_EQ(Api("POST", "/api/sandboxes", CreateBody(id(i), "t-" + id(i))).status, 200);
  }
  std::vector<std::thread> callers;
  for (int i = 0; i < kSandboxes; ++i) {
    callers.emplace_back([&, i] { Curl("DELETE", Url("/api/sandboxes/" + id(i))); });
  }
  // The kill lands once the first delete is through, with the others under way.
  auto left = [&] {
    int n = 0;
    for (int i = 0; i < kSandboxes; ++i) n += runtime::InspectSandbox("df-" + id(i)) ? 1 : 0;
    return n;
  };
  for (int i = 0; i < 500 && left() == kSandboxes; ++i)
    std::this_thread::sleep_for(milliseconds(2));
  StopDaemon(SIGKILL);
  for (auto& t : callers) t.join();

  StartDaemon(Config());
  int kept = 0;
  for (int i = 0; i < kSandboxes; ++i) {
    auto got = Api("GET", "/api/sandboxes/" + id(i));
    if (got.status == 404) continue;
    ASSERT_EQ(got.status, 200) << id(i) << ": " << got.body;
    ++kept;
    auto shell = Curl("POST", got.Json()["sandbox_url"].get<std::string>() + "/v1/shell/exec",
                      json({{"command", "echo ok"}}).dump(), {}, false);
    ASSERT_EQ(shell.status, 200) << id(i) << " is listed but broken: " << shell.body << DaemonLog();
    EXPECT_EQ(shell.Json()["data"]["output"], "ok\n") << id(i) << ": " << shell.body;
  }
  std::cerr << "[figure] kill -9 during " << kSandboxes << " deletes: " << kept << " kept whole, "
            << kSandboxes - kept << " gone\n";
  for (int i = 0; i < kSandboxes; ++i)
    ASSERT_EQ(Api("DELETE", "/api/sandboxes/" + id(i)).status, 200);
  auto ps = RunCorral({"ps"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  EXPECT_EQ(ps->out.find("df-dd"), std::string::npos) << ps->out;
}

TEST_F(ServeTest, AioCallsReachTheSandboxAndDeleteEndsTheirSessions) {
  StartDaemon(Config());
  auto created = Api("POST", "/api/sandboxes", CreateBody("aio1", "t-aio"));
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  auto shell = Curl("POST", url + "/v1/shell/exec",
                    json({{"command", "echo hi; id -u; pwd"}}).dump(), {}, false);
  ASSERT_EQ(shell.status, 200) << shell.body;
  EXPECT_EQ(shell.Json()["data"]["output"], "hi\n1000\n/mnt/user-data/workspace\n") << shell.body;
  EXPECT_NE(Api("GET", "/metrics").body.find("corral_aio_live_sessions 1"), std::string::npos);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/aio1").status, 200);
  EXPECT_NE(Api("GET", "/metrics").body.find("corral_aio_live_sessions 0"), std::string::npos);
  EXPECT_EQ(
      Curl("POST", url + "/v1/shell/exec", json({{"command", "true"}}).dump(), {}, false).status,
      404);
}

// Counts the entries of /proc/<pid>/<sub> ("fd", "task").
size_t CountEntries(pid_t pid, const std::string& sub) {
  std::error_code ec;
  size_t n = 0;
  for (auto it =
           std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/" + sub, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// What a sandbox's sessions held (pipes, threads, the shells' jail processes) is given back
// when the sandbox is deleted, not when the next request happens to come.
TEST_F(ServeTest, DeletedSandboxesGiveBackTheirResourcesWithoutAnotherRequest) {
  StartDaemon(Config());
  auto cycle = [&](const std::string& id) {
    auto created = Api("POST", "/api/sandboxes", CreateBody(id, "t-" + id));
    ASSERT_EQ(created.status, 200) << created.body;
    const std::string url = created.Json()["sandbox_url"];
    for (const char* route : {"/v1/shell/exec", "/v1/bash/exec"}) {
      auto r = Curl("POST", url + route, json({{"command", "echo hi"}}).dump(), {}, false);
      ASSERT_EQ(r.status, 200) << route << " " << r.body;
    }
    ASSERT_EQ(Api("DELETE", "/api/sandboxes/" + id).status, 200);
  };
  // The first cycle opens what the daemon keeps for its life (worker threads, the orphan sink).
  ASSERT_NO_FATAL_FAILURE(cycle("fd0"));
  auto settled = [&](size_t fds, size_t threads) {
    for (int i = 0; i < 100; ++i) {
      if (CountEntries(daemon_, "fd") <= fds && CountEntries(daemon_, "task") <= threads &&
          ChildrenOf(daemon_).empty()) {
        return true;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  };
  ASSERT_TRUE(settled(SIZE_MAX, SIZE_MAX));
  const size_t fds = CountEntries(daemon_, "fd"), threads = CountEntries(daemon_, "task");
  for (int i = 1; i <= 6; ++i) ASSERT_NO_FATAL_FAILURE(cycle("fd" + std::to_string(i)));
  // No request from here on: whatever the six sandboxes held must go by itself.
  EXPECT_TRUE(settled(fds, threads)) << "fds " << CountEntries(daemon_, "fd") << " (were " << fds
                                     << "), threads " << CountEntries(daemon_, "task") << " (were "
                                     << threads << "), children " << ChildrenOf(daemon_).size();
}

TEST_F(ServeTest, SigtermExitsCleanlyAndKeepsSandboxes) {
  StartDaemon(Config("  shutdown_grace: 2\n"));
  auto created = Api("POST", "/api/sandboxes", CreateBody("st1", "t-st"));
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  // A call still running at SIGTERM gets its answer by the grace deadline.
  HttpAnswer slow;
  std::thread caller([&] {
    slow = Curl("POST", url + "/v1/shell/exec", json({{"command", "sleep 30"}}).dump(), {}, false);
  });
  std::this_thread::sleep_for(milliseconds(1000));
  const auto start = std::chrono::steady_clock::now();
  int status = StopDaemon(SIGTERM);
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(WIFEXITED(status)) << status << DaemonLog();
  EXPECT_EQ(WEXITSTATUS(status), 0) << DaemonLog();
  EXPECT_EQ(slow.status, 200) << slow.body;
  EXPECT_NE(slow.Json()["data"]["status"], "completed") << slow.body;
  auto info = runtime::InspectSandbox("df-st1");
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->alive) << "SIGTERM keeps sandboxes";
}

TEST_F(ServeTest, RequestsInFlightAndConnectionsPerClientAreBounded) {
  StartDaemon(Config("  max_in_flight: 1\n  max_connections_per_client: 3\n"));
  auto created = Api("POST", "/api/sandboxes", CreateBody("fl1", "t-fl"));
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  std::thread slow([&] {
    Curl("POST", url + "/v1/shell/exec", json({{"command", "sleep 3"}}).dump(), {}, false);
  });
  std::this_thread::sleep_for(milliseconds(1000));
  auto busy = Curl("GET", Url("/api/capabilities"), "", {}, true, {"-D", dir_.Join("headers")});
  EXPECT_EQ(busy.status, 429) << busy.body;
  std::ifstream in(dir_.Join("headers"));
  std::stringstream headers;
  headers << in.rdbuf();
  EXPECT_NE(server::ToLower(headers.str()).find("retry-after: 1"), std::string::npos)
      << headers.str();
  EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).status, 200) << "/health is exempt";
  slow.join();
  EXPECT_EQ(Api("GET", "/api/capabilities").status, 200);
  // Three idle connections of this client are allowed; the fourth is refused.
  std::vector<UniqueFd> held;
  for (int i = 0; i < 3; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port_));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    held.push_back(std::move(fd));
  }
  std::this_thread::sleep_for(milliseconds(300));
  auto fourth =
      Raw("GET /health HTTP/1.1\r\nHost: " + Authority() + "\r\n\r\n", milliseconds(3000));
  EXPECT_EQ(fourth.received.rfind("HTTP/1.1 429", 0), 0u) << fourth.received;
  held.clear();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).status, 200);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/fl1").status, 200);
}

TEST_F(ServeTest, IdleSandboxesAreReaped) {
  std::string config = Config();
  config.replace(config.find("idle_timeout: 0"), 15, "idle_timeout: 2");
  StartDaemon(config);
  ASSERT_EQ(Api("POST", "/api/sandboxes", CreateBody("idle1", "t-idle")).status, 200);
  ASSERT_TRUE(runtime::InspectSandbox("df-idle1"));
  bool gone = false;
  for (int i = 0; i < 80 && !gone; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    gone = Api("GET", "/api/sandboxes/idle1").status == 404;
  }
  // Each GET above is a provisioner call, not use of the sandbox: it still idles out.
  EXPECT_TRUE(gone) << "an idle sandbox outlived sandbox.idle_timeout";
  EXPECT_FALSE(runtime::InspectSandbox("df-idle1"));
}

// sandbox.idle_action pause: an idle sandbox is paused, not removed; a call resumes it
// (the agent sees an answer, not "paused"); once idle for paused_timeout it goes.
TEST_F(ServeTest, IdleSandboxesArePausedResumedByACallAndRemovedLater) {
  std::string config = Config();
  config.replace(config.find("idle_timeout: 0"), 15,
                 "idle_timeout: 1\n  idle_action: pause\n  paused_timeout: 4");
  StartDaemon(config);
  auto created = Api("POST", "/api/sandboxes", CreateBody("pz1", "t-pause"));
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  auto paused = [] {
    auto info = runtime::InspectSandbox("df-pz1");
    return info && info->alive && info->paused_seconds.has_value();
  };
  bool was_paused = false;
  for (int i = 0; i < 80 && !was_paused; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    was_paused = paused();
  }
  ASSERT_TRUE(was_paused) << "an idle sandbox was not paused\n" << DaemonLog();
  EXPECT_NE(Api("GET", "/metrics").body.find("corral_sandboxes{state=\"paused\"} 1"),
            std::string::npos);
  auto r = Curl("POST", url + "/v1/shell/exec", R"({"command":"echo resumed"})",
                {"Content-Type: application/json"}, false);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("resumed"), std::string::npos) << r.body;
  EXPECT_NE(Api("GET", "/metrics").body.find("corral_sandbox_events_total{event=\"resumed\"} 1"),
            std::string::npos);
  bool gone = false;
  for (int i = 0; i < 150 && !gone; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    gone = Api("GET", "/api/sandboxes/pz1").status == 404;
  }
  EXPECT_TRUE(gone) << "a paused sandbox outlived sandbox.paused_timeout\n" << DaemonLog();
  EXPECT_FALSE(runtime::InspectSandbox("df-pz1"));
  EXPECT_NE(
      Api("GET", "/metrics").body.find("corral_sandbox_events_total{event=\"reaped_paused\"} 1"),
      std::string::npos);
}

TEST_F(ServeTest, ServesOnAUnixSocket) {
  const std::string sock = dir_.Join("api.sock");
  std::string config = Config();
  config.replace(config.find("127.0.0.1:0"), 11, "'unix:" + sock + "'");
  ASSERT_TRUE(dir_.WriteFile("corral.yaml", config));
  auto pid = StartProgram({CorralBinary(), "serve", "--config", dir_.Join("corral.yaml")});
  ASSERT_TRUE(pid);
  daemon_ = *pid;
  HttpAnswer health;
  for (int i = 0; i < 100 && health.status != 200; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    health = Curl("GET", "http://localhost/health", "", {}, false, {"--unix-socket", sock});
  }
  ASSERT_EQ(health.status, 200);
  struct stat st;
  ASSERT_EQ(::stat(sock.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  auto created = Curl("POST", "http://localhost/api/sandboxes", CreateBody("u1", "t-u"), {}, true,
                      {"--unix-socket", sock});
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string url = created.Json()["sandbox_url"];
  EXPECT_EQ(url.rfind("http://localhost/sandboxes/u1/", 0), 0u) << url;
  EXPECT_EQ(Curl("GET", url + "/v1/sandbox", "", {}, false, {"--unix-socket", sock}).status, 200);
  EXPECT_EQ(
      Curl("DELETE", "http://localhost/api/sandboxes/u1", "", {}, true, {"--unix-socket", sock})
          .status,
      200);
  int status = StopDaemon(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// sd_notify through dlopen'ed libsystemd: READY=1 once listening, STOPPING=1 at SIGTERM.
TEST_F(ServeTest, NotifiesSystemd) {
  if (::access("/usr/lib/x86_64-linux-gnu/libsystemd.so.0", F_OK) != 0 &&
      ::access("/lib/x86_64-linux-gnu/libsystemd.so.0", F_OK) != 0) {
    GTEST_SKIP() << "no libsystemd.so.0 on this host";
  }
  const std::string path = dir_.Join("notify.sock");
  UniqueFd sock(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(sock.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  auto receive = [&] {
    pollfd p{sock.get(), POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) return std::string("(nothing)");
    char buf[512];
    ssize_t n = ::recv(sock.get(), buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("(error)");
  };
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  StartDaemon(Config());
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_EQ(receive(), "READY=1");
  int status = StopDaemon(SIGTERM);
  EXPECT_EQ(receive(), "STOPPING=1");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(ServeTest, RefusesToStartUnsafely) {
  ASSERT_TRUE(dir_.WriteFile("nokey.yaml", "sandbox: {base_dir: " + dir_.Join("base") + "}\n"));
  RunOptions no_key;
  no_key.env = {"CORRAL_API_KEY="};
  auto nokey =
      RunCorral({"serve", "--config", dir_.Join("nokey.yaml"), "--listen", "127.0.0.1:0"}, no_key);
  ASSERT_TRUE(nokey);
  EXPECT_EQ(nokey->exit_code, 125);
  EXPECT_NE(nokey->err.find("no API key"), std::string::npos) << nokey->err;
  RunOptions with_key;
  with_key.env = {"CORRAL_API_KEY=k"};
  auto remote = RunCorral({"serve", "--listen", "0.0.0.0:0"}, with_key);
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->exit_code, 125);
  EXPECT_NE(remote->err.find("--allow-remote"), std::string::npos) << remote->err;
}

}  // namespace
}  // namespace corral::test
