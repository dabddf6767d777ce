// The pure parts of `corral serve`: credentials, listen addresses and the Host check,
// request validation, the registry's files, route templates, the `server:` config section.
#include "server/http/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "runtime/spec/server_config.h"
#include "server/http/auth.h"
#include "server/http/content_disposition.h"
#include "server/http/listen_address.h"
#include "server/provisioner/provision_request.h"
#include "server/provisioner/sandbox_registry.h"
#include "server/router.h"
#include "tests/support/temp_dir.h"

namespace corral::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(ServerAuth, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("secret-key", "secret-key"));
  EXPECT_FALSE(ConstantTimeEquals("secret-kez", "secret-key"));
  EXPECT_FALSE(ConstantTimeEquals("secret-key-longer", "secret-key"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secret-key"));
  EXPECT_FALSE(ConstantTimeEquals("", "secret-key"));
  EXPECT_FALSE(ConstantTimeEquals("", "")) << "an empty secret opens nothing";
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(ServerAuth, RandomTokensAreLongAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto t = RandomToken();
    ASSERT_TRUE(t);
    EXPECT_EQ(t->size(), 64u);
    EXPECT_EQ(t->find_first_not_of("0123456789abcdef"), std::string::npos);
    seen.insert(*t);
  }
  EXPECT_EQ(seen.size(), 100u);
}

std::string KeyOf(const std::string& configured, const std::string& file = "") {
  auto key = ResolveApiKey(configured, file);
  return key ? *key : "error: " + key.error().message();
}

TEST(ServerAuth, ApiKeyFromConfigOrEnvironment) {
  ::setenv("CORRAL_TEST_SERVE_KEY", "from-var", 1);
  ::setenv("CORRAL_API_KEY", "from-env", 1);
  EXPECT_EQ(KeyOf("literal"), "literal");
  EXPECT_EQ(KeyOf("$CORRAL_TEST_SERVE_KEY"), "from-var");
  EXPECT_EQ(KeyOf(""), "from-env");
  ::unsetenv("CORRAL_API_KEY");
  EXPECT_EQ(KeyOf(""), "");
  EXPECT_EQ(KeyOf("$CORRAL_TEST_SERVE_NOPE"), "");
  ::unsetenv("CORRAL_TEST_SERVE_KEY");
}

// A key file (server.api_key_file) or a systemd credential: owner-only, trimmed; a file
// others can read is refused with the chmod that fixes it.
TEST(ServerAuth, ApiKeyFromAFileOrASystemdCredential) {
  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("key", "  s3cret-key\n"));
  ASSERT_EQ(::chmod(dir.Join("key").c_str(), 0600), 0);
  ::setenv("CORRAL_API_KEY", "from-env", 1);
  EXPECT_EQ(KeyOf("", dir.Join("key")), "s3cret-key");
  EXPECT_EQ(KeyOf("literal", dir.Join("key")), "literal") << "api_key comes first";
  ASSERT_EQ(::chmod(dir.Join("key").c_str(), 0644), 0);
  EXPECT_THAT(KeyOf("", dir.Join("key")),
              HasSubstr("mode 0644 lets others read the key; chmod 600 " + dir.Join("key")));
  EXPECT_THAT(KeyOf("", dir.Join("nope")), HasSubstr(dir.Join("nope")));
  ASSERT_TRUE(dir.MakeDirs("creds"));
  ASSERT_TRUE(dir.WriteFile("creds/corral-api-key", "from-credential"));
  ASSERT_EQ(::chmod(dir.Join("creds/corral-api-key").c_str(), 0400), 0);
  ::setenv("CREDENTIALS_DIRECTORY", dir.Join("creds").c_str(), 1);
  EXPECT_EQ(KeyOf(""), "from-credential");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  EXPECT_EQ(KeyOf(""), "from-env");
  ::unsetenv("CORRAL_API_KEY");
}

TEST(ServerListen, ParsesAddresses) {
  auto v4 = ParseListenAddress("127.0.0.1:8002");
  ASSERT_TRUE(v4);
  EXPECT_TRUE(v4->loopback);
  EXPECT_EQ(v4->port, 8002);
  auto v6 = ParseListenAddress("[::1]:9000");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->loopback);
  EXPECT_EQ(v6->ToString(), "[::1]:9000");
  auto local = ParseListenAddress("localhost:1");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->host, "127.0.0.1");
  auto any = ParseListenAddress("0.0.0.0:8002");
  ASSERT_TRUE(any);
  EXPECT_FALSE(any->loopback);
  EXPECT_TRUE(any->unspecified);
  EXPECT_FALSE(ParseListenAddress("10.1.2.3:80")->loopback);
  auto unix_socket = ParseListenAddress("unix:/run/corral/api.sock");
  ASSERT_TRUE(unix_socket);
  EXPECT_TRUE(unix_socket->is_unix);
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "::1:80", "host.example:80",
                          "unix:relative", "1.2.3:80", "127.0.0.1:8o"}) {
    auto r = ParseListenAddress(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_THAT(r.error().message(), HasSubstr("--listen"));
    }
  }
}

TEST(ServerListen, HostCheckAcceptsOnlyThisServer) {
  HostCheck loop(*ParseListenAddress("127.0.0.1:8002"), 8002, {"gw.internal:8002"});
  for (const char* ok : {"127.0.0.1:8002", "localhost:8002", "LOCALHOST:8002", "[::1]:8002",
                         " 127.0.0.1:8002 ", "gw.internal:8002", "GW.internal:8002"}) {
    EXPECT_TRUE(loop.Accepts(ok)) << ok;
  }
  for (const char* bad : {"evil.example", "evil.example:8002", "127.0.0.1", "127.0.0.1:8003",
                          "localhost", "127.0.0.1:8002.evil", "", "gw.internal"}) {
    EXPECT_FALSE(loop.Accepts(bad)) << bad;
  }
  HostCheck port80(*ParseListenAddress("127.0.0.1:80"), 80, {});
  EXPECT_TRUE(port80.Accepts("localhost"));
  EXPECT_TRUE(port80.Accepts("127.0.0.1"));
  HostCheck remote(*ParseListenAddress("10.0.0.5:8002"), 8002, {});
  EXPECT_TRUE(remote.Accepts("10.0.0.5:8002"));
  EXPECT_FALSE(remote.Accepts("localhost:8002")) << "loopback names only for a loopback listen";
  HostCheck any(*ParseListenAddress("0.0.0.0:8002"), 8002, {});
  EXPECT_TRUE(any.empty());
  EXPECT_FALSE(any.Accepts("0.0.0.0:8002"));
  HostCheck sock(*ParseListenAddress("unix:/run/x.sock"), 0, {});
  EXPECT_TRUE(sock.Accepts("localhost"));
  EXPECT_FALSE(sock.Accepts("evil.example"));
}

TEST(ServerRequest, SandboxIds) {
  EXPECT_EQ(SandboxIdProblem("a1b2c3d4e5f60718"), "");
  EXPECT_EQ(SandboxIdProblem(std::string(64, 'a')), "");
  EXPECT_THAT(SandboxIdProblem(std::string(65, 'a')), HasSubstr("64"));
  EXPECT_THAT(SandboxIdProblem(""), HasSubstr("empty"));
  for (const std::string& bad : {std::string("a/b"), std::string(".."), std::string("a\0b", 3),
                                 std::string("a b"), std::string("ü")}) {
    EXPECT_THAT(SandboxIdProblem(bad), HasSubstr("only letters")) << bad;
  }
}

int StatusOf(const std::variant<CreateParams, RequestError>& r) {
  return std::holds_alternative<RequestError>(r) ? std::get<RequestError>(r).status : 200;
}
std::string DetailOf(const std::variant<CreateParams, RequestError>& r) {
  return std::holds_alternative<RequestError>(r) ? std::get<RequestError>(r).body.dump() : "";
}

TEST(ServerRequest, CreateBodies) {
  test::TempDir dir;
  ASSERT_TRUE(dir.MakeDirs("base/shared"));
  const std::string base = dir.Join("base");
  auto ok = ParseCreateRequest(
      R"({"sandbox_id":"s1","thread_id":null,"include_legacy_skills":true})", base);
  ASSERT_EQ(StatusOf(ok), 200) << DetailOf(ok);
  const auto& p = std::get<CreateParams>(ok);
  EXPECT_EQ(p.user_id, "default");
  EXPECT_FALSE(p.thread_id);
  EXPECT_TRUE(p.include_legacy_skills);
  auto full = ParseCreateRequest(
      json({{"sandbox_id", "s1"},
            {"thread_id", "t-1"},
            {"user_id", "u_2"},
            {"extra_mounts", json::array({{{"host_path", base + "/shared"},
                                           {"container_path", "/mnt/skills/custom"},
                                           {"read_only", true}},
                                          {{"host_path", base + "/new/dir"},
                                           {"container_path", "/mnt/integrations/lark-cli/data"},
                                           {"read_only", false}}})}})
          .dump(),
      base);
  ASSERT_EQ(StatusOf(full), 200) << DetailOf(full);
  EXPECT_EQ(std::get<CreateParams>(full).extra_mounts.size(), 2u);

  EXPECT_EQ(StatusOf(ParseCreateRequest("{", base)), 422);
  EXPECT_EQ(StatusOf(ParseCreateRequest("{}", base)), 422);
  EXPECT_THAT(DetailOf(ParseCreateRequest("{}", base)), HasSubstr("Field required"));
  EXPECT_EQ(
      StatusOf(ParseCreateRequest(R"({"sandbox_id":"s","include_legacy_skills":"yes"})", base)),
      422);
  EXPECT_EQ(StatusOf(ParseCreateRequest(R"({"sandbox_id":"s","user_id":""})", base)), 422);
  json eleven = json::array();
  for (int i = 0; i < 11; ++i) {
    eleven.push_back({{"host_path", base}, {"container_path", "/mnt/acp-workspace"}});
  }
  auto many =
      ParseCreateRequest(json({{"sandbox_id", "s"}, {"extra_mounts", eleven}}).dump(), base);
  EXPECT_EQ(StatusOf(many), 400);
  EXPECT_THAT(DetailOf(many), HasSubstr("at most 10"));
  // A symlink under the base that leads out of it.
  ASSERT_EQ(::symlink("/etc", (base + "/link").c_str()), 0);
  auto link = ParseCreateRequest(
      json({{"sandbox_id", "s"},
            {"extra_mounts", json::array({{{"host_path", base + "/link"},
                                           {"container_path", "/mnt/acp-workspace"}}})}})
          .dump(),
      base);
  EXPECT_EQ(StatusOf(link), 400);
  EXPECT_THAT(DetailOf(link), HasSubstr("symlink"));
  auto below = ParseCreateRequest(
      json({{"sandbox_id", "s"},
            {"extra_mounts", json::array({{{"host_path", base + "/link/new"},
                                           {"container_path", "/mnt/acp-workspace"}}})}})
          .dump(),
      base);
  EXPECT_EQ(StatusOf(below), 400) << DetailOf(below);
}

TEST(ServerRegistry, SavesLoadsAndLocks) {
  test::TempDir dir;
  const std::string where = dir.Join("serve");
  auto reg = SandboxRegistry::Open(where);
  ASSERT_TRUE(reg) << reg.error().message();
  auto second = SandboxRegistry::Open(where);
  ASSERT_FALSE(second);
  EXPECT_THAT(second.error().message(), HasSubstr("another corral serve"));
  RegistryEntry a{"a1", "df-a1", std::string(64, 'f'), "default", "t1", "/base/ud", 12.5};
  RegistryEntry b{"b2", "df-b2", std::string(64, 'e'), "u", std::nullopt, "/base/ud2", 13};
  ASSERT_TRUE(reg->Save(a));
  ASSERT_TRUE(reg->Save(b));
  struct stat st;
  ASSERT_EQ(::stat((where + "/sandboxes/a1.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(where.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_TRUE(dir.WriteFile("serve/sandboxes/junk.json", "{nope"));
  ASSERT_TRUE(dir.WriteFile("serve/sandboxes/c3.json", EntryToJson(a).dump()));  // wrong name
  std::vector<std::string> problems;
  auto loaded = reg->Load(&problems);
  std::sort(loaded.begin(), loaded.end(),
            [](const auto& x, const auto& y) { return x.sandbox_id < y.sandbox_id; });
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0], a);
  EXPECT_EQ(loaded[1], b);
  EXPECT_EQ(problems.size(), 2u);
  ASSERT_TRUE(reg->Remove("a1"));
  ASSERT_TRUE(reg->Remove("a1")) << "idempotent";
  problems.clear();
  EXPECT_EQ(reg->Load(&problems).size(), 1u);
  EXPECT_FALSE(EntryFromJson(json({{"sandbox_id", "../x"}})));
  json short_token = EntryToJson(a);
  short_token["token"] = "abc";
  EXPECT_FALSE(EntryFromJson(short_token));
}

TEST(ServerRouter, RouteTemplatesCarryNoIds) {
  EXPECT_EQ(RouteTemplate("v1/shell/exec"), "v1/shell/exec");
  EXPECT_EQ(RouteTemplate("v1/shell/sessions/3f2a-11"), "v1/shell/sessions/{x}");
  EXPECT_EQ(RouteTemplate("v1/bash/sessions/abc1/close"), "v1/bash/sessions/{x}/close");
  EXPECT_EQ(RouteTemplate(""), "{x}");
}

TEST(ServerHttp, PercentDecode) {
  EXPECT_EQ(PercentDecode("/a%2Fb%00c", false), std::string("/a/b\0c", 6));
  EXPECT_EQ(PercentDecode("a+b%20c", true), "a b c");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("%zz%4", false), "%zz%4");
}

TEST(ServerConfig, SectionKeysAndProblems) {
  runtime::ServerConfig c;
  ASSERT_TRUE(runtime::LoadServerConfig(
      YAML::Load("{listen: 'unix:/run/x.sock', api_key: $K, max_body_bytes: 200m, "
                 "header_timeout: 5, max_in_flight: 8, allowed_hosts: [a:1], session_slots: 0}"),
      &c));
  EXPECT_EQ(c.listen, "unix:/run/x.sock");
  EXPECT_EQ(c.max_body_bytes, 200 * runtime::kMiB);
  EXPECT_EQ(c.max_in_flight, 8);
  EXPECT_EQ(c.allowed_hosts, std::vector<std::string>{"a:1"});
  EXPECT_EQ(c.session_slots, 0);  // 0 is allowed: no slots
  auto bad = runtime::LoadServerConfig(
      YAML::Load("{max_in_flight: 0, header_timeout: -1, lisen: x, max_body_bytes: lots, "
                 "access_log: rel, session_slots: -1}"),
      &c);
  ASSERT_FALSE(bad);
  for (const char* want :
       {"server.max_in_flight: must be > 0", "server.header_timeout", "server.lisen: unknown key",
        "server.max_body_bytes", "server.access_log", "server.session_slots: must be >= 0"}) {
    EXPECT_THAT(bad.error().message(), HasSubstr(want));
  }
  // The default body limit fits a 100 MiB file as base64 in a JSON body.
  EXPECT_GE(runtime::ServerConfig{}.max_body_bytes, (100 * runtime::kMiB + 2) / 3 * 4 + 4096);
}

// A download's name is bytes the sandbox chose: plain ASCII passes as it is; anything else
// gets an ASCII fallback and RFC 5987's exact UTF-8 form, and never a raw quote or CR/LF.
TEST(ContentDisposition, PlainNamesStayAndOthersAreEncoded) {
  EXPECT_EQ(AttachmentDisposition("report-1.txt"), "attachment; filename=\"report-1.txt\"");
  EXPECT_EQ(AttachmentDisposition("a\"b\r\nSet-Cookie: x"),
            "attachment; filename=\"a_b__Set-Cookie: x\"; "
            "filename*=UTF-8''a%22b%0D%0ASet-Cookie%3A%20x");
  EXPECT_EQ(AttachmentDisposition("\xe6\x97\xa5.md"),
            "attachment; filename=\"___.md\"; filename*=UTF-8''%E6%97%A5.md");
  EXPECT_EQ(AttachmentDisposition("100%"),
            "attachment; filename=\"100_\"; filename*=UTF-8''100%25");
}

}  // namespace
}  // namespace corral::server
