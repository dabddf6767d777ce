// Inputs the fuzz targets (tests/fuzz/) found to crash, hang or break an invariant, each
// kept as a test of the parser it broke. The same inputs are in tests/fuzz/corpus/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "jail/seccomp_profile_parse.h"
#include "runtime/pool/pool_protocol.h"
#include "runtime/pool/pool_request.h"
#include "runtime/spec/config.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/spec_json.h"
#include "tests/support/temp_dir.h"
#include "tools/providers/local_sandbox.h"

namespace corral {
namespace {

using ::testing::HasSubstr;

// yaml-cpp 0.7 never returns from YAML::LoadAll on these (it yields empty documents
// forever, growing until memory runs out); the loader runs in a thread here so that a
// regression fails the test instead of hanging it.
Status LoadWithin10s(const std::string& yaml) {
  auto done = std::make_shared<std::promise<Status>>();
  auto result = done->get_future();
  std::thread([done, yaml] {
    runtime::JailSpec spec;
    done->set_value(runtime::LoadConfigText(yaml, "c.yaml", &spec));
  }).detach();
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "LoadConfigText did not return for " << yaml;
    std::abort();  // the thread cannot be stopped; end here rather than hang or grow
  }
  return result.get();
}

TEST(FuzzRegressions, ConfigWithAStrayCommaIsAnErrorNotAHang) {
  for (const char* yaml : {",", "\"x\",", ",imits:\n  cpu_timez: null\nrootfs: null\n", " ,"}) {
    Status st = LoadWithin10s(yaml);
    ASSERT_FALSE(st) << yaml;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(st.error().message(), HasSubstr("c.yaml:1:")) << yaml;
    EXPECT_THAT(st.error().message(), HasSubstr("invalid YAML")) << yaml;
  }
}

TEST(FuzzRegressions, ConfigDocumentCountIsStillChecked) {
  EXPECT_TRUE(LoadWithin10s(""));
  EXPECT_TRUE(LoadWithin10s("limits:\n  pids: 10\n"));
  EXPECT_TRUE(LoadWithin10s("---\nlimits:\n  pids: 10\n"));
  Status two = LoadWithin10s("limits:\n  pids: 10\n---\nlimits:\n  pids: 20\n");
  ASSERT_FALSE(two);
  EXPECT_THAT(two.error().message(), HasSubstr("expected one YAML document, found 2"));
  Status three = LoadWithin10s("---\n---\n---\n");
  ASSERT_FALSE(three);
  EXPECT_THAT(three.error().message(), HasSubstr("found 3"));
}

// A config string that is not UTF-8 was accepted; SpecToJson's dump() then threw, so
// `corral create` ended in std::terminate writing the state file. Both loaders refuse it.
TEST(FuzzRegressions, ConfigTextThatIsNotUtf8IsRefusedWithItsLine) {
  Status st = LoadWithin10s("limits:\n  pids: 10\nworkdir: /tmp/caf\xe9\n");
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("c.yaml:3: not valid UTF-8"));
  EXPECT_TRUE(LoadWithin10s("workdir: /tmp/caf\xc3\xa9\n"));  // é in UTF-8 is fine
  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("c.yaml", "sandbox:\n  base_dir: /srv/\xff\n", 0644));
  runtime::ProviderConfig config;
  runtime::JailSpec spec;
  Status tools = runtime::LoadToolConfigFile(dir.Join("c.yaml"), &config, &spec);
  ASSERT_FALSE(tools);
  EXPECT_THAT(tools.error().message(), HasSubstr("c.yaml:2: not valid UTF-8"));
}

// A number too large for a double made nlohmann throw out_of_range, which the profile
// parser did not catch (only parse_error): `corral run --seccomp FILE` ended in
// std::terminate.
TEST(FuzzRegressions, SeccompProfileWithAnOverflowingNumberIsAnError) {
  for (const char* text : {"{\"defaultAction\": 1e99999}", "3330e333333333337"}) {
    auto profile = jail::ParseSeccompProfile(text);
    ASSERT_FALSE(profile) << text;
    EXPECT_THAT(profile.error().message(), HasSubstr("invalid JSON")) << text;
  }
}

// nlohmann casts a floating-point number to an integer field, undefined behaviour when it
// is out of range ("status": 1e123 in a pool reply; UBSan in the fuzzer).
TEST(FuzzRegressions, PoolReplyWithAFloatWhereAnIntegerBelongsIsAnError) {
  runtime::RunOutcome outcome;
  auto wire = nlohmann::json::parse(runtime::OutcomeToWire(outcome));
  for (const char* key : {"status", "exit_code"}) {
    auto bad = wire;
    bad[key] = 1.11e123;
    auto parsed = runtime::OutcomeFromWire(bad.dump());
    ASSERT_FALSE(parsed) << key;
    EXPECT_THAT(parsed.error().message(), HasSubstr(std::string(key) + ": expected an integer"));
  }
  auto bytes = wire;
  bytes["stdout"]["bytes"] = 1e300;
  EXPECT_FALSE(runtime::OutcomeFromWire(bytes.dump()));
  EXPECT_TRUE(runtime::OutcomeFromWire(wire.dump()));
}

// The same class in the spec's JSON form (a persistent sandbox's state file, the pool's
// run frames): "gid": 6.5e96 was cast to uint32_t (UBSan in fuzz_spec_json).
TEST(FuzzRegressions, SpecJsonWithAFloatOrOutOfRangeIntegerFieldIsAnError) {
  auto good = nlohmann::json::parse(runtime::SpecToJson(runtime::JailSpec()));
  EXPECT_TRUE(runtime::SpecFromJson(good.dump()));
  for (auto [key, value] : {std::pair<const char*, nlohmann::json>{"gid", 6.5e96},
                            {"uid", -1},
                            {"uid", 4294967296LL},
                            {"uid", 1000.0}}) {
    auto bad = good;
    bad[key] = value;
    auto spec = runtime::SpecFromJson(bad.dump());
    ASSERT_FALSE(spec) << key << "=" << value;
    EXPECT_THAT(spec.error().message(), HasSubstr(std::string(key) + ": expected an integer"));
  }
  auto limits = good;
  limits["limits"]["pids"] = 1e300;
  EXPECT_FALSE(runtime::SpecFromJson(limits.dump()));
}

// A key of the wrong type made nlohmann's value() throw out of the pool server's
// connection thread, which ended the whole server.
TEST(FuzzRegressions, PoolRequestHeadOfTheWrongTypeIsAnError) {
  for (const char* frame : {R"({"op":1})", R"({"op":"run","capture":"yes"})",
                            R"({"op":"run","stdin":[]})", R"({"op":"exec","brief":0})"}) {
    auto head = runtime::ParsePoolRequestHead(frame);
    ASSERT_FALSE(head) << frame;
    EXPECT_EQ(head.error().code(), ErrorCode::kInvalidArgument);
  }
  auto bad_capture = runtime::ParsePoolRequestHead(R"({"op":"run","capture":"yes"})");
  EXPECT_THAT(bad_capture.error().message(), HasSubstr("capture: expected a boolean"));
  auto head = runtime::ParsePoolRequestHead(R"({"op":"run","capture":true,"brief":true})");
  ASSERT_TRUE(head) << head.error().message();
  EXPECT_EQ(head->op, "run");
  EXPECT_TRUE(head->capture);
  EXPECT_FALSE(head->pass_stdin);
  EXPECT_TRUE(head->brief);
  // Not an object at all: no op, which the server answers with "malformed request".
  auto garbage = runtime::ParsePoolRequestHead("not json");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->op, "");
}

TEST(FuzzRegressions, RunSpecFrameWithANonBooleanDefaultSpecIsAnError) {
  auto spec = runtime::ParseRunSpecFrame(R"({"default_spec":["/bin/true"]})");
  ASSERT_FALSE(spec);
  EXPECT_THAT(spec.error().message(), HasSubstr("default_spec: expected a boolean"));
  auto fine = runtime::ParseRunSpecFrame(R"({"default_spec":true,"argv":["/bin/true"]})");
  ASSERT_TRUE(fine) << fine.error().message();
  EXPECT_EQ(fine->argv, std::vector<std::string>{"/bin/true"});
}

// "/mnt/data//x" mapped to the absolute rel "/x"; "/mnt/user-data//workspace/a" was
// refused as outside the allowed paths.
TEST(FuzzRegressions, LocalPathsWithRepeatedSlashesMapLikeSingleOnes) {
  test::TempDir dir;
  ASSERT_TRUE(dir.MakeDirs("ud/workspace"));
  ASSERT_TRUE(dir.MakeDirs("data"));
  ASSERT_TRUE(dir.WriteFile("ud/workspace/a.txt", "alpha\n"));
  ASSERT_TRUE(dir.WriteFile("data/x", "x\n"));
  runtime::LocalSandbox sb(
      "t", {{"/mnt/user-data", dir.Join("ud"), false}, {"/mnt/data", dir.Join("data"), true}},
      false);
  auto x = sb.Resolve("/mnt/data//x", false);
  ASSERT_TRUE(x) << x.error().message;
  EXPECT_EQ(x->rel, "x");
  EXPECT_EQ(x->view.root, dir.Join("data"));
  auto text = sb.ReadFile("/mnt/data//x", std::nullopt, std::nullopt);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "x\n");
  auto a = sb.ReadFile("/mnt/user-data//workspace///a.txt", std::nullopt, std::nullopt);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(*a, "alpha\n");
  // Still refused: traversal, and writes to the read-only mapping however it is spelt.
  EXPECT_FALSE(sb.Resolve("/mnt/data//..//etc", false));
  EXPECT_FALSE(sb.Resolve("//mnt//data//x", true));
}

}  // namespace
}  // namespace corral
