// The AIO API's answer shapes and request validation (server/aio/envelope.h), and the
// dispatch answers that need no sandbox (unknown routes, wrong methods, bad bodies).
#include <gtest/gtest.h>

#include <cerrno>
#include <future>

#include "server/aio/api.h"
#include "server/aio/envelope.h"
#include "server/aio/internal.h"

namespace corral::server {
namespace {

using nlohmann::json;
using runtime::SandboxErrc;

json Body(const HttpResponse& r) { return json::parse(r.body); }

TEST(AioEnvelope, OkFailAndSessionNotFound) {
  EXPECT_EQ(Body(aio::Ok(json{{"a", 1}})), json({{"success", true},
                                                 {"message", "Operation successful"},
                                                 {"data", {{"a", 1}}},
                                                 {"hint", nullptr}}));
  HttpResponse nf = aio::SessionNotFound();
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(Body(nf),
            json({{"success", false}, {"message", "Session not found"}, {"data", nullptr}}));
  EXPECT_EQ(Body(aio::RouteNotFound()), json({{"detail", "Not Found"}}));
}

TEST(AioEnvelope, FileOperationErrors) {
  json e = aio::FileErrorData({SandboxErrc::kNotFound, "gone", 0}, "/p", "read");
  EXPECT_EQ(e["error_type"], "not_found");
  EXPECT_EQ(e["errno"], ENOENT);
  EXPECT_EQ(e["errno_name"], "ENOENT");
  EXPECT_EQ(e["exception_type"], "FileNotFoundError");
  EXPECT_EQ(e["path"], "/p");
  EXPECT_EQ(e["operation"], "read");
  EXPECT_EQ(aio::FileErrorData({SandboxErrc::kIo, "full", ENOSPC}, "/p", "write")["error_type"],
            "no_space_left");
  EXPECT_EQ(aio::FileErrorData({SandboxErrc::kIo, "ro", EROFS}, "/p", "write")["error_type"],
            "read_only_filesystem");
  EXPECT_EQ(aio::FileErrorData({SandboxErrc::kBinary, "bin", 0}, "/p", "read")["error_type"],
            "decode_error");
  EXPECT_EQ(aio::FileErrorData({SandboxErrc::kIsDirectory, "dir", 0}, "/p", "read")["error_type"],
            "invalid_target");
  EXPECT_EQ(aio::FileErrorData({SandboxErrc::kPermissionDenied, "no", EACCES}, "/p",
                               "read")["error_type"],
            "permission_denied");
  EXPECT_EQ(
      aio::FileErrorData({SandboxErrc::kInvalidArgument, "nul", 0}, "/p", "read")["error_type"],
      "invalid_path");
  HttpResponse r = aio::FileFail({SandboxErrc::kNotFound, "gone", 0}, "/p", "read");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["success"], false);
}

TEST(AioEnvelope, FieldsValidateLikeFastApi) {
  aio::Fields empty("");
  EXPECT_TRUE(empty.ok());
  EXPECT_FALSE(empty.String("command").has_value());
  aio::Fields broken("{\"a\":");
  EXPECT_FALSE(broken.ok());
  EXPECT_EQ(broken.Error().status, 422);
  EXPECT_EQ(Body(broken.Error())["detail"][0]["type"], "json_invalid");
  aio::Fields list("[1]");
  EXPECT_FALSE(list.ok());
  aio::Fields f(
      R"({"command": 5, "n": 2.0, "m": 2.5, "b": "yes", "env": {"A": "1", "B": null, "C": 3}, "x": null})");
  EXPECT_FALSE(f.String("command").has_value());
  EXPECT_EQ(f.Integer("n"), 2);
  EXPECT_FALSE(f.Integer("m").has_value());
  EXPECT_FALSE(f.Bool("b").has_value());
  auto env = f.StringMap("env");
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->size(), 1u);  // B is null (nothing to set), C is refused
  EXPECT_FALSE(f.String("x", true).has_value());
  json detail = Body(f.Error())["detail"];
  std::vector<std::string> types;
  for (const auto& d : detail) types.push_back(d["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"string_type", "int_from_float", "bool_type",
                                             "string_type", "missing"}));
  EXPECT_EQ(detail[0]["loc"], json({"body", "command"}));
  EXPECT_EQ(detail[3]["loc"], json({"body", "env", "C"}));
  aio::Fields nul(
      json{{"file", std::string("a\0b", 3)}, {"content", std::string("x\0y", 3)}}.dump());
  EXPECT_FALSE(nul.String("file").has_value());
  EXPECT_EQ(nul.String("content", false, true), std::string("x\0y", 3));
  EXPECT_FALSE(nul.ok());
}

// The HTTP server bounds a body's size (server.max_body_bytes, 140 MiB: a 100 MiB file as
// base64); the JSON layer bounds only its depth, so a large upload is read whole.
TEST(AioEnvelope, ABodyAsLargeAsTheServerAllowsIsRead) {
  const std::string content(100u << 20, 'A');  // base64 of a 75 MiB file
  aio::Fields f("{\"file\": \"/tmp/big\", \"content\": \"" + content + "\"}");
  ASSERT_TRUE(f.ok()) << Body(f.Error()).dump().substr(0, 300);
  EXPECT_EQ(f.String("content").value_or("").size(), content.size());
}

TEST(AioEnvelope, MiddleTruncationKeepsUtf8Whole) {
  EXPECT_EQ(aio::MiddleTruncate("short", 10), "short");
  std::string s;
  for (int i = 0; i < 1000; ++i) s += "é";  // 2 bytes each
  std::string t = aio::MiddleTruncate(s, 101);
  EXPECT_LT(t.size(), 200u);
  EXPECT_NE(t.find("middle truncated"), std::string::npos);
  auto valid = [](const std::string& x) {
    for (size_t i = 0; i < x.size();) {
      unsigned char c = static_cast<unsigned char>(x[i]);
      size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      if (n == 0 || i + n > x.size()) return false;
      for (size_t k = 1; k < n; ++k) {
        if ((static_cast<unsigned char>(x[i + k]) >> 6) != 2) return false;
      }
      i += n;
    }
    return true;
  };
  EXPECT_TRUE(valid(t));
}

HttpResponse Handle(AioApi& api, const std::string& method, const std::string& subpath,
                    const std::string& body) {
  HttpRequest r;
  r.method = method;
  r.body = body;
  std::promise<HttpResponse> p;
  auto fut = p.get_future();
  api.Handle({"sbx", "no-such-corral-sandbox"}, subpath, r,
             [&p](HttpResponse x) { p.set_value(x); });
  return fut.get();
}

TEST(AioDispatch, RoutesMethodsAndValidationNeedNoSandbox) {
  AioApi api(AioApiOptions{});
  EXPECT_EQ(Handle(api, "GET", "v1/nope", "").status, 404);
  EXPECT_EQ(Handle(api, "GET", "v2/sandbox", "").status, 404);
  EXPECT_EQ(Handle(api, "GET", "v1/shell/exec", "").status, 405);
  // The route table (server/aio/routes.cc) decides 404 and 405, and names what is allowed.
  HttpResponse refused = Handle(api, "GET", "v1/shell/sessions/create", "");
  EXPECT_EQ(refused.status, 405);
  ASSERT_EQ(refused.headers.size(), 1u);
  EXPECT_EQ(refused.headers[0], (std::pair<std::string, std::string>{"Allow", "POST, DELETE"}));
  EXPECT_EQ(Handle(api, "GET", "v1/file/nope", "").status, 404) << "unknown whatever the method";
  EXPECT_EQ(Handle(api, "POST", "v1/bash/sessions//close", "").status, 404);
  EXPECT_EQ(Body(Handle(api, "POST", "v1/bash/sessions/nope/close", ""))["message"],
            "Session not found");
  EXPECT_EQ(Body(Handle(api, "DELETE", "v1/shell/sessions/nope", ""))["message"],
            "Session not found");
  EXPECT_EQ(Handle(api, "POST", "v1/shell/exec", "{").status, 422);
  EXPECT_EQ(Handle(api, "POST", "v1/bash/exec", "{\"command\": []}").status, 422);
  EXPECT_EQ(Handle(api, "POST", "v1/file/read", "{}").status, 422);
  EXPECT_EQ(
      Handle(api, "POST", "v1/file/grep", R"({"path":"/","pattern":"x","max_results":0})").status,
      422);
  HttpResponse unknown = Handle(api, "POST", "v1/shell/view", R"({"id":"nope"})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(Body(unknown)["message"], "Session not found");
  EXPECT_EQ(api.live_sessions(), 0u);
}

}  // namespace
}  // namespace corral::server
