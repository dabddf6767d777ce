// corral's own API, the pure parts: the embedded OpenAPI document (valid JSON, OpenAPI 3,
// every route documented) and the request parsers (each error names its field).
#include <gtest/gtest.h>

#include <algorithm>

#include "server/corral_api/api.h"
#include "server/corral_api/request.h"
#include "server/corral_api/stream.h"

namespace corral::server {
namespace {

using nlohmann::json;

TEST(CorralApiOpenApi, IsJsonOpenApi3WithEveryRoute) {
  json doc = json::parse(OpenApiDocument(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << "server/corral_api/openapi.json is not valid JSON";
  ASSERT_TRUE(doc["openapi"].is_string());
  EXPECT_EQ(doc["openapi"].get<std::string>().rfind("3.", 0), 0u);
  ASSERT_TRUE(doc["paths"].is_object());
  for (const auto& [method, path] : CorralApi::Routes()) {
    std::string lower = method;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    EXPECT_TRUE(doc["paths"].contains(path) && doc["paths"][path].contains(lower))
        << method << " " << path << " is served but not documented";
  }
  for (const char* path : {"/health", "/metrics", "/api/capabilities", "/api/sandboxes",
                           "/api/sandboxes/{sandbox_id}"}) {
    EXPECT_TRUE(doc["paths"].contains(path)) << path;
  }
  // Every $ref points at a component that exists.
  std::function<void(const json&)> walk = [&](const json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if (k == "$ref" && v.is_string()) {
          const std::string ref = v;
          ASSERT_EQ(ref.rfind("#/components/", 0), 0u) << ref;
          json::json_pointer ptr(ref.substr(1));
          EXPECT_TRUE(doc.contains(ptr)) << ref << " is dangling";
        } else {
          walk(v);
        }
      }
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(doc);
}

std::string FieldOf(const std::variant<SandboxCreate, ApiError>& r) {
  auto* e = std::get_if<ApiError>(&r);
  return e ? e->field : "<no error>";
}

TEST(CorralApiRequest, SandboxSpecErrorsNameTheField) {
  runtime::JailSpec base;
  auto parse = [&](const json& body) {
    return ParseSandboxCreate(body.dump(), base, "/nonexistent");
  };
  EXPECT_EQ(FieldOf(parse({{"spec", {{"limits", {{"memory", "lots"}}}}}})), "spec.limits.memory");
  EXPECT_EQ(FieldOf(parse({{"spec", {{"limits", {{"open_files", "x"}}}}}})),
            "spec.limits.open_files");
  EXPECT_EQ(FieldOf(parse({{"spec", {{"cgroups", {{"driver", "v2"}}}}}})), "spec.cgroups");
  EXPECT_EQ(
      FieldOf(parse({{"spec", {{"mounts", {{{"host_path", "/tmp"}, {"container_path", "/t"}}}}}}})),
      "spec.mounts[0].host_path");
  EXPECT_EQ(FieldOf(parse({{"spec", "limits"}})), "spec");
  EXPECT_EQ(FieldOf(parse({{"name", ""}})), "name");
  EXPECT_EQ(FieldOf(parse({{"name", std::string(65, 'a')}})), "name");
  EXPECT_EQ(std::get<ApiError>(parse(json::array())).status, 400);
  EXPECT_EQ(FieldOf(parse({{"from", 3}})), "from");
  EXPECT_EQ(FieldOf(parse({{"from", "../up"}})), "from");
  auto from = parse({{"from", "base.1"}});
  ASSERT_TRUE(std::holds_alternative<SandboxCreate>(from)) << std::get<ApiError>(from).message;
  EXPECT_EQ(std::get<SandboxCreate>(from).from_snapshot, "base.1");

  auto ok =
      parse({{"name", "box"}, {"spec", {{"limits", {{"memory", "64m"}}}, {"env", {{"A", "b"}}}}}});
  ASSERT_TRUE(std::holds_alternative<SandboxCreate>(ok)) << std::get<ApiError>(ok).message;
  const SandboxCreate& c = std::get<SandboxCreate>(ok);
  EXPECT_EQ(c.name, "box");
  EXPECT_EQ(c.spec.limits.memory_bytes, 64 << 20);
  EXPECT_EQ(c.spec.limits.pids, base.limits.pids) << "what the spec does not set stays the base's";
}

TEST(CorralApiRequest, ExecRequest) {
  auto ok = ParseExecRequest(
      R"({"command":"echo hi","env":{"A":"1"},"timeout":2.5,"output_limit":"1k","workdir":"/tmp"})",
      "box");
  ASSERT_TRUE(std::holds_alternative<runtime::ExecRequest>(ok));
  const auto& r = std::get<runtime::ExecRequest>(ok);
  EXPECT_EQ(r.sandbox, "box");
  EXPECT_EQ(r.argv, (std::vector<std::string>{"/bin/bash", "-c", "echo hi"}));
  EXPECT_EQ(r.env, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}}));
  EXPECT_EQ(r.timeout_seconds, 2.5);
  EXPECT_EQ(r.output_limit_bytes, 1024);
  EXPECT_TRUE(r.io.capture_output);
  auto field = [](const std::string& body) {
    auto p = ParseExecRequest(body, "box");
    auto* e = std::get_if<ApiError>(&p);
    return e ? e->field : "<no error>";
  };
  EXPECT_EQ(field(R"({"argv":[]})"), "argv");
  EXPECT_EQ(field(R"({"argv":["a",1]})"), "argv[1]");
  EXPECT_EQ(field(R"({"command":"x","timeout":"1"})"), "timeout");
  EXPECT_EQ(field(R"({"command":"x","output_limit":0})"), "output_limit");
  EXPECT_EQ(field(R"({"command":"x","env":{"A":1}})"), "env.A");
  EXPECT_EQ(field(R"({"command":"x","extra":1})"), "extra");
  EXPECT_EQ(field("{\"argv\":[\"a\\u0000b\"]}"), "argv");
  EXPECT_EQ(field(R"({"command":"x","stream":true})"), "stream")
      << "unknown without a stream out-parameter";
}

TEST(CorralApiRequest, ExecStreamField) {
  bool stream = true;
  ASSERT_TRUE(std::holds_alternative<runtime::ExecRequest>(
      ParseExecRequest(R"({"command":"x"})", "box", &stream)));
  EXPECT_TRUE(stream) << "left alone when not given (the Accept header decides)";
  ASSERT_TRUE(std::holds_alternative<runtime::ExecRequest>(
      ParseExecRequest(R"({"command":"x","stream":false})", "box", &stream)));
  EXPECT_FALSE(stream);
  ASSERT_TRUE(std::holds_alternative<runtime::ExecRequest>(
      ParseExecRequest(R"({"command":"x","stream":true})", "box", &stream)));
  EXPECT_TRUE(stream);
  auto bad = ParseExecRequest(R"({"command":"x","stream":"yes"})", "box", &stream);
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).field, "stream");
}

TEST(CorralApiStream, Utf8SequencesAreNeverSplit) {
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xc3"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xc3\xa9"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("\xe2\x82"), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("x\xe2\x82\xac"), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("\xf0\x9f\x98"), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("\xf0\x9f\x98\x80"), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("\x80\x80"), 2u) << "stray continuation bytes: nothing to wait for";
  EXPECT_EQ(CompleteUtf8Prefix("a\xff"), 2u) << "an invalid lead byte stands alone";
}

}  // namespace
}  // namespace corral::server
