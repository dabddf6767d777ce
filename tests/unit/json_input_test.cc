// JSON from outside the process is bounded in size and depth (base/json_input.h), and every
// front end that parses it refuses a body nested too deeply with a 4xx instead of ending
// the process. 100,000 levels overflowed the daemon's stack before the bound existed.
#include "base/json_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/pool/pool_request.h"
#include "runtime/spec/spec_json.h"
#include "server/aio/envelope.h"
#include "server/corral_api/request.h"
#include "server/provisioner/provision_request.h"

namespace corral {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// {"command": [[[...]]]} with `levels` arrays: `levels` + 1 levels in all.
std::string DeepCommand(size_t levels) {
  return R"({"command":)" + std::string(levels, '[') + std::string(levels, ']') + "}";
}

TEST(JsonInput, AcceptsDepthUpToTheBoundAndRefusesOneMore) {
  JsonInputLimits limits;
  limits.max_depth = 8;
  EXPECT_TRUE(std::holds_alternative<json>(ParseJsonInput(DeepCommand(7), limits)));
  auto deeper = ParseJsonInput(DeepCommand(8), limits);
  ASSERT_TRUE(std::holds_alternative<JsonInputError>(deeper));
  EXPECT_EQ(std::get<JsonInputError>(deeper).problem, JsonInputProblem::kTooDeep);
  EXPECT_THAT(std::get<JsonInputError>(deeper).message, HasSubstr("deeper than 8 levels"));
}

TEST(JsonInput, AHundredThousandLevelsAreRefusedNotFollowed) {
  for (const char* open : {"[", "{\"a\":"}) {
    std::string text;
    for (int i = 0; i < 100000; ++i) text += open;
    auto parsed = ParseJsonInput(text);  // unterminated as well: depth is seen first
    ASSERT_TRUE(std::holds_alternative<JsonInputError>(parsed)) << open;
    EXPECT_EQ(std::get<JsonInputError>(parsed).problem, JsonInputProblem::kTooDeep) << open;
  }
  EXPECT_TRUE(ParseJsonInputOrDiscarded(DeepCommand(100000)).is_discarded());
}

TEST(JsonInput, SyntaxErrorsKeepTheParsersMessageAndOffset) {
  auto parsed = ParseJsonInput(R"({"a": tru})");
  ASSERT_TRUE(std::holds_alternative<JsonInputError>(parsed));
  const auto& error = std::get<JsonInputError>(parsed);
  EXPECT_EQ(error.problem, JsonInputProblem::kSyntax);
  EXPECT_THAT(error.message, HasSubstr("parse error"));
  EXPECT_GT(error.byte, 0u);
  auto as_result = ParseJsonInputOrError("[1,");
  ASSERT_FALSE(as_result);
  EXPECT_EQ(as_result.error().code(), ErrorCode::kInvalidArgument);
}

TEST(JsonInput, SizeBound) {
  JsonInputLimits limits;
  limits.max_bytes = 10;
  auto parsed = ParseJsonInput(R"({"a":"0123456789"})", limits);
  ASSERT_TRUE(std::holds_alternative<JsonInputError>(parsed));
  EXPECT_EQ(std::get<JsonInputError>(parsed).problem, JsonInputProblem::kTooLarge);
  EXPECT_EQ(ParseJsonInputOrDiscarded(R"({"a":[1,{"b":null}]})"),
            json::parse(R"({"a":[1,{"b":null}]})"));
}

// Each front end: the field holds the wrong type (as in the report) or is ignored; either
// way the answer is a 400 that says why, and nothing recurses into the value.
TEST(JsonInput, AioFacesAnswer400) {
  for (const std::string& body :
       {DeepCommand(100000),
        R"({"command":"ls","x":)" + std::string(1000, '[') + std::string(1000, ']') + "}"}) {
    server::aio::Fields fields(body);
    EXPECT_FALSE(fields.ok());
    server::HttpResponse answer = fields.Error();
    EXPECT_EQ(answer.status, 400);
    EXPECT_THAT(answer.body, HasSubstr("deeper than 64 levels"));
  }
  server::aio::Fields broken("{\"a\":");
  EXPECT_EQ(broken.Error().status, 422);  // a syntax error stays FastAPI's 422
}

TEST(JsonInput, CorralApiAnswers400) {
  auto exec = server::ParseExecRequest(DeepCommand(100000), "box");
  ASSERT_TRUE(std::holds_alternative<server::ApiError>(exec));
  EXPECT_EQ(std::get<server::ApiError>(exec).status, 400);
  EXPECT_THAT(std::get<server::ApiError>(exec).message, HasSubstr("deeper than 64 levels"));
  runtime::PythonSpec policy;
  auto code = server::ParseCodeRequest(DeepCommand(100000), "box", policy);
  ASSERT_TRUE(std::holds_alternative<server::ApiError>(code));
  EXPECT_EQ(std::get<server::ApiError>(code).status, 400);
  runtime::JailSpec base;
  auto create = server::ParseSandboxCreate(DeepCommand(100000), base, "/nonexistent");
  ASSERT_TRUE(std::holds_alternative<server::ApiError>(create));
  EXPECT_EQ(std::get<server::ApiError>(create).status, 400);
}

TEST(JsonInput, ProvisionerAnswers400) {
  auto create = server::ParseCreateRequest(DeepCommand(100000), "/nonexistent");
  ASSERT_TRUE(std::holds_alternative<server::RequestError>(create));
  EXPECT_EQ(std::get<server::RequestError>(create).status, 400);
  EXPECT_THAT(std::get<server::RequestError>(create).body.dump(),
              HasSubstr("deeper than 64 levels"));
}

TEST(JsonInput, PoolFramesAndSpecsAreRefused) {
  auto head = runtime::ParsePoolRequestHead(DeepCommand(100000));
  ASSERT_FALSE(head);
  EXPECT_THAT(head.error().message(), HasSubstr("deeper than 64 levels"));
  EXPECT_FALSE(runtime::ParseExecFrame(DeepCommand(100000)));
  EXPECT_FALSE(runtime::ParseRunSpecFrame(DeepCommand(100000)));
  auto spec = runtime::SpecFromJson(DeepCommand(100000));
  ASSERT_FALSE(spec);
  EXPECT_THAT(spec.error().message(), HasSubstr("sandbox spec: JSON nests deeper"));
}

}  // namespace
}  // namespace corral
