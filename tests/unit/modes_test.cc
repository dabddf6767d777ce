// The typed modes of a JailSpec (runtime/spec/modes.h): every value's spelling round-trips,
// the allowed lists and bad-value texts are the words users saw before the modes were typed,
// and a bad value is refused where it is read: YAML (file:line), the JSON of a record (the
// field), the OCI runtime lookup.
#include "runtime/spec/modes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/oci/oci_runtime.h"
#include "runtime/spec/config.h"
#include "runtime/spec/spec_json.h"

namespace corral::runtime {
namespace {

template <typename E>
void ExpectRoundTrip(std::initializer_list<E> values) {
  for (E value : values) {
    const std::string_view name = Name(value);
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(ParseMode<E>(name), value) << name;
  }
}

TEST(Modes, EveryValueRoundTripsThroughItsName) {
  ExpectRoundTrip({RunMode::kProcess, RunMode::kContainer});
  ExpectRoundTrip({NetworkMode::kNone, NetworkMode::kAllowlist, NetworkMode::kHost});
  ExpectRoundTrip({CgroupDriverChoice::kAuto, CgroupDriverChoice::kV1, CgroupDriverChoice::kV2});
  ExpectRoundTrip({LandlockMode::kAuto, LandlockMode::kOn, LandlockMode::kOff});
  ExpectRoundTrip({IdentityMode::kAuto, IdentityMode::kReserved, IdentityMode::kHostUid});
  ExpectRoundTrip({ScanMode::kDeny, ScanMode::kWarn, ScanMode::kOff});
}

TEST(Modes, SpellingsAreTheConfigFilesOnes) {
  EXPECT_EQ(Name(LandlockMode::kOn), "true");
  EXPECT_EQ(Name(LandlockMode::kOff), "false");
  EXPECT_EQ(Name(IdentityMode::kHostUid), "host-uid");
  EXPECT_EQ(ParseMode<NetworkMode>("Host"), std::nullopt) << "no case folding";
  EXPECT_EQ(ParseMode<NetworkMode>(""), std::nullopt);
  EXPECT_EQ(AllowedModes<CgroupDriverChoice>(), "auto, v1 or v2");
  EXPECT_EQ(AllowedModes<RunMode>(), "process or container");
  EXPECT_EQ(AllowedModes<NetworkMode>(), "none, allowlist or host");
}

TEST(Modes, BadValueTextsAreValidatesWords) {
  EXPECT_EQ(BadModeText<RunMode>("vm"), "must be process or container (got \"vm\")");
  EXPECT_EQ(BadModeText<NetworkMode>("bridge"),
            "must be one of none, allowlist, host (got \"bridge\")");
  EXPECT_EQ(BadModeText<CgroupDriverChoice>("v3"), "must be auto, v1 or v2 (got \"v3\")");
  EXPECT_EQ(BadModeText<LandlockMode>("maybe"), "must be auto, true or false (got \"maybe\")");
  EXPECT_EQ(BadModeText<IdentityMode>("x"), "must be auto, reserved or host-uid (got \"x\")");
  EXPECT_EQ(BadModeText<ScanMode>("x"), "must be deny, warn or off (got \"x\")");
  EXPECT_EQ(BadOciRuntimeText("docker"),
            "must be auto, crun, runc or an absolute path (got \"docker\")");
  EXPECT_EQ(BadModeText<CgroupDriverChoice>(std::string("v2\0", 3)),
            "must not contain a NUL byte (got \"v2\\0\")");
}

TEST(Modes, OciRuntimeIsANameOrAnAbsolutePath) {
  EXPECT_EQ(ParseOciRuntime("auto"), OciRuntimeChoice{});
  EXPECT_EQ(ParseOciRuntime("runc"), (OciRuntimeChoice{OciRuntimeName::kRunc, ""}));
  const std::optional<OciRuntimeChoice> path = ParseOciRuntime("/usr/bin/crun");
  ASSERT_TRUE(path);
  EXPECT_EQ(path->name, OciRuntimeName::kPath);
  EXPECT_EQ(Name(*path), "/usr/bin/crun");
  for (const std::string& bad : {std::string("docker"), std::string(), std::string("crun/"),
                                 std::string("bin/crun"), std::string("/x\0y", 4)}) {
    EXPECT_EQ(ParseOciRuntime(bad), std::nullopt) << bad;
  }
  auto refused = oci::FindOciRuntime("docker");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(),
            "oci_runtime: must be auto, crun, runc or an absolute path (got \"docker\")");
}

// Where Validate used to report them, now the loader does, at the key's line.
TEST(Modes, YamlRefusesABadModeAtItsLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"hostname: a\nidentity: someone\n",
       "t.yaml:2: identity: must be auto, reserved or host-uid (got \"someone\")"},
      {"oci_runtime: docker\n",
       "t.yaml:1: oci_runtime: must be auto, crun, runc or an absolute path (got \"docker\")"},
      {"cgroups: {driver: v3}\n", "t.yaml:1: cgroups.driver: must be auto, v1 or v2 (got \"v3\")"},
  };
  for (const auto& [yaml, want] : cases) {
    JailSpec spec;
    Status st = LoadConfigText(yaml, "t.yaml", &spec);
    ASSERT_FALSE(st) << yaml;
    EXPECT_EQ(st.error().message(), want);
  }
  JailSpec spec;
  ASSERT_TRUE(LoadConfigText("oci_runtime: /opt/runc\nidentity: host-uid\n", "t.yaml", &spec));
  EXPECT_EQ(spec.oci_runtime, (OciRuntimeChoice{OciRuntimeName::kPath, "/opt/runc"}));
  EXPECT_EQ(spec.identity, IdentityMode::kHostUid);
}

TEST(Modes, JsonKeepsTheSpellingsAndRefusesABadModeByItsField) {
  JailSpec spec;
  spec.argv = {"/bin/true"};
  spec.mode = RunMode::kContainer;
  spec.identity = IdentityMode::kHostUid;
  spec.cgroups.driver = CgroupDriverChoice::kV1;
  spec.network.mode = NetworkMode::kAllowlist;
  spec.landlock.enabled = LandlockMode::kOff;
  const nlohmann::json j = nlohmann::json::parse(SpecToJson(spec));
  EXPECT_EQ(j["mode"], "container");
  EXPECT_EQ(j["identity"], "host-uid");
  EXPECT_EQ(j["cgroups"]["driver"], "v1");
  EXPECT_EQ(j["network"]["mode"], "allowlist");
  EXPECT_EQ(j["landlock"]["enabled"], "false");
  Result<JailSpec> back = SpecFromJson(j.dump());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, spec);

  const std::pair<nlohmann::json::json_pointer, const char*> cases[] = {
      {nlohmann::json::json_pointer("/mode"), "mode: must be process or container (got \"x\")"},
      {nlohmann::json::json_pointer("/identity"),
       "identity: must be auto, reserved or host-uid (got \"x\")"},
      {nlohmann::json::json_pointer("/cgroups/driver"),
       "cgroups.driver: must be auto, v1 or v2 (got \"x\")"},
      {nlohmann::json::json_pointer("/network/mode"),
       "network.mode: must be one of none, allowlist, host (got \"x\")"},
      {nlohmann::json::json_pointer("/landlock/enabled"),
       "landlock.enabled: must be auto, true or false (got \"x\")"},
  };
  for (const auto& [pointer, want] : cases) {
    nlohmann::json bad = j;
    bad[pointer] = "x";
    Result<JailSpec> refused = SpecFromJson(bad.dump());
    ASSERT_FALSE(refused) << pointer.to_string();
    EXPECT_EQ(refused.error().message(), std::string("sandbox spec: ") + want);
  }
}

}  // namespace
}  // namespace corral::runtime
