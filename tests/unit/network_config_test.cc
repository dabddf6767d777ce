// The network allow-list between the user and NetworkSpec: the config file's `network:`
// section (and its process-sandbox synonym), unsafe.network_resolve, namespaces.net's
// agreement with network.mode, Validate()'s network rules, the --network/--allow/--deny
// merge and the spec's JSON form. Each error is asserted with its exact field path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/run/planner.h"
#include "runtime/spec/config.h"
#include "runtime/spec/spec_json.h"
#include "tests/unit/config_text.h"

namespace corral::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

using Pairs = std::vector<std::pair<std::string, std::string>>;
using Strings = std::vector<std::string>;

using config_text::Load;
using config_text::LoadError;

// ---- The config file ----

TEST(NetworkConfig, AbsentSectionKeepsTheDefaults) {
  const JailSpec spec = Load("hostname: h\n");
  EXPECT_EQ(spec.network, NetworkSpec{});
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_TRUE(spec.namespaces.net);
  EXPECT_THAT(spec.unsafe.network_resolve, IsEmpty());
}

TEST(NetworkConfig, ReadsEveryKey) {
  const JailSpec spec = Load(R"(network:
  mode: allowlist
  allow: [pypi.org, files.pythonhosted.org, "*.github.com:443"]
  deny: [evil.github.com]
  max_connections: 8
  max_bytes: 100M
)");
  EXPECT_EQ(spec.network.mode, NetworkMode::kAllowlist);
  EXPECT_EQ(spec.network.allow,
            (Strings{"pypi.org", "files.pythonhosted.org", "*.github.com:443"}));
  EXPECT_EQ(spec.network.deny, Strings{"evil.github.com"});
  EXPECT_EQ(spec.network.max_connections, 8);
  EXPECT_EQ(spec.network.max_bytes, 100 * kMiB);
  EXPECT_TRUE(spec.namespaces.net);
}

TEST(NetworkConfig, MaxBytesNullUnsetsAndSizesHaveUnits) {
  JailSpec spec;
  spec.network.max_bytes = 5;
  ASSERT_TRUE(LoadConfigText("network: {max_bytes: null}\n", "t", &spec));
  EXPECT_EQ(spec.network.max_bytes, std::nullopt);
  ASSERT_TRUE(LoadConfigText("network: {max_bytes: 1.5g}\n", "t", &spec));
  EXPECT_EQ(spec.network.max_bytes, 3 * kGiB / 2);
  ASSERT_TRUE(LoadConfigText("network: {max_bytes: 4096}\n", "t", &spec));
  EXPECT_EQ(spec.network.max_bytes, 4096);
}

TEST(NetworkConfig, AllowAloneMeansAllowlist) {
  EXPECT_EQ(Load("network: {allow: [pypi.org]}\n").network.mode, NetworkMode::kAllowlist);
  // An empty list chooses nothing; nor does deny.
  EXPECT_EQ(Load("network: {allow: []}\n").network.mode, NetworkMode::kNone);
  EXPECT_EQ(Load("network: {deny: [x.org]}\n").network.mode, NetworkMode::kNone);
  // An explicit mode stays what it says (the rules are kept for a later --network).
  const JailSpec spec = Load("network: {mode: none, allow: [pypi.org]}\n");
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_EQ(spec.network.allow, Strings{"pypi.org"});
}

TEST(NetworkConfig, ListsReplaceTheCallersRules) {
  JailSpec spec;
  spec.network.allow = {"old.org"};
  spec.network.deny = {"old-deny.org"};
  ASSERT_TRUE(LoadConfigText("network: {allow: [new.org]}\n", "t", &spec));
  EXPECT_EQ(spec.network.allow, Strings{"new.org"});
  EXPECT_EQ(spec.network.deny, Strings{"old-deny.org"});
}

TEST(NetworkConfig, DesignFormIsASynonym) {
  JailSpec off = Load("network: {enabled: false}\n");
  EXPECT_EQ(off.network.mode, NetworkMode::kNone);
  EXPECT_THAT(off.network.allow, IsEmpty());

  JailSpec open = Load("network: {enabled: true}\n");
  EXPECT_EQ(open.network.mode, NetworkMode::kAllowlist);
  EXPECT_EQ(open.network.allow, Strings{"*"});  // public internet, never the host's network
  EXPECT_TRUE(open.namespaces.net);

  JailSpec listed = Load("network: {enabled: true, allow_domains: [pypi.org, github.com]}\n");
  EXPECT_EQ(listed.network.mode, NetworkMode::kAllowlist);
  EXPECT_EQ(listed.network.allow, (Strings{"pypi.org", "github.com"}));

  JailSpec alone = Load("network: {allow_domains: [pypi.org]}\n");
  EXPECT_EQ(alone.network.mode, NetworkMode::kAllowlist);
  EXPECT_EQ(alone.network.allow, Strings{"pypi.org"});

  // The limits go with either form.
  JailSpec limited = Load("network: {enabled: true, max_connections: 3, max_bytes: 1m}\n");
  EXPECT_EQ(limited.network.max_connections, 3);
  EXPECT_EQ(limited.network.max_bytes, kMiB);

  // enabled: false over a caller's allow-list clears its rules.
  JailSpec spec;
  spec.network.mode = NetworkMode::kAllowlist;
  spec.network.allow = {"pypi.org"};
  ASSERT_TRUE(LoadConfigText("network: {enabled: false}\n", "t", &spec));
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_THAT(spec.network.allow, IsEmpty());
}

TEST(NetworkConfig, MixingTheFormsIsAnErrorNamingTheKeys) {
  EXPECT_EQ(LoadError("network:\n  enabled: true\n  mode: allowlist\n  allow: [a.org]\n"),
            "t.yaml:1: network: enabled (the process-sandbox design's form) cannot be mixed "
            "with mode, allow; write either enabled/allow_domains or mode/allow/deny");
  EXPECT_EQ(LoadError("network: {allow_domains: [a.org], enabled: true, deny: [b.org]}\n"),
            "t.yaml:1: network: enabled, allow_domains (the process-sandbox design's form) "
            "cannot be mixed with deny; write either enabled/allow_domains or mode/allow/deny");
}

TEST(NetworkConfig, DesignFormErrors) {
  EXPECT_EQ(LoadError("network:\n  enabled: false\n  allow_domains: [a.org]\n"),
            "t.yaml:3: network.allow_domains: given with enabled: false, which reaches "
            "nothing; remove one");
  EXPECT_EQ(LoadError("network: {enabled: true, allow_domains: []}\n"),
            "t.yaml:1: network.allow_domains: empty; nothing would be reachable - use "
            "enabled: false");
  EXPECT_EQ(LoadError("network: {enabled: yes}\n"),
            "t.yaml:1: network.enabled: expected true or false, got \"yes\"");
  EXPECT_EQ(LoadError("network: {allow_domains: pypi.org}\n"),
            "t.yaml:1: network.allow_domains: expected a list of strings, got \"pypi.org\"");
  // enabled: false with an empty allow_domains is plain mode none.
  EXPECT_EQ(Load("network: {enabled: false, allow_domains: []}\n").network.mode,
            NetworkMode::kNone);
}

TEST(NetworkConfig, TypeErrorsNameTheKey) {
  EXPECT_EQ(LoadError("network: {allow: pypi.org}\n"),
            "t.yaml:1: network.allow: expected a list of strings, got \"pypi.org\"");
  EXPECT_EQ(LoadError("network:\n  deny:\n    - a.org\n    - [b]\n"),
            "t.yaml:4: network.deny[1]: expected a string, got a list");
  EXPECT_EQ(LoadError("network: {mode: [none]}\n"),
            "t.yaml:1: network.mode: expected a string, got a list");
  EXPECT_EQ(LoadError("network: {max_connections: 0}\n"),
            "t.yaml:1: network.max_connections: must be at least 1 (got 0)");
  EXPECT_EQ(LoadError("network: {max_bytes: 0}\n"),
            "t.yaml:1: network.max_bytes: must be greater than 0 (got 0)");
  EXPECT_EQ(LoadError("network: {max_bytes: lots}\n"),
            "t.yaml:1: network.max_bytes: expected a size like 512m, got \"lots\"");
  EXPECT_THAT(LoadError("network: {allowed: [x]}\n"),
              StartsWith("t.yaml:1: network.allowed: unknown key (did you mean allow?); known "
                         "keys: mode, allow, deny, max_connections, max_bytes, enabled, "
                         "allow_domains"));
  EXPECT_EQ(LoadError("network: none\n"), "t.yaml:1: network: expected a mapping, got \"none\"");
}

TEST(NetworkConfig, NetworkResolveIsAMapOfNamesToAddresses) {
  const JailSpec spec = Load(R"(unsafe:
  network_resolve:
    pypi.test: 127.0.0.1
    dual.test: [10.0.0.5, "fd00::5"]
)");
  EXPECT_EQ(
      spec.unsafe.network_resolve,
      (Pairs{{"pypi.test", "127.0.0.1"}, {"dual.test", "10.0.0.5"}, {"dual.test", "fd00::5"}}));
  EXPECT_EQ(LoadError("unsafe: {network_resolve: [a.test]}\n"),
            "t.yaml:1: unsafe.network_resolve: expected a mapping of NAME: address, got a list");
  EXPECT_EQ(LoadError("unsafe:\n  network_resolve:\n    a.test: {ip: 1.2.3.4}\n"),
            "t.yaml:3: unsafe.network_resolve.a.test: expected a string, got a mapping");
  EXPECT_EQ(LoadError("unsafe: {network_resolve: {a.test: 1.1.1.1, a.test: 2.2.2.2}}\n"),
            "t.yaml:1: unsafe.network_resolve.a.test: duplicate key");
}

// ---- namespaces.net and network.mode: host are one setting ----

TEST(NetworkConfig, HostModeAndNamespacesNetFollowEachOther) {
  JailSpec by_mode = Load("network: {mode: host}\nunsafe: {host_network: true}\n");
  EXPECT_EQ(by_mode.network.mode, NetworkMode::kHost);
  EXPECT_FALSE(by_mode.namespaces.net);

  JailSpec by_namespace = Load("namespaces: {net: false}\nunsafe: {host_network: true}\n");
  EXPECT_EQ(by_namespace.network.mode, NetworkMode::kHost);
  EXPECT_FALSE(by_namespace.namespaces.net);

  // Both, agreeing.
  JailSpec both = Load("namespaces: {net: false}\nnetwork: {mode: host}\n");
  EXPECT_EQ(both.network.mode, NetworkMode::kHost);
  EXPECT_FALSE(both.namespaces.net);

  // A later source that picks a namespaced mode gets its namespace back, and the reverse.
  JailSpec spec = by_mode;
  ASSERT_TRUE(LoadConfigText("network: {allow: [pypi.org]}\n", "t", &spec));
  EXPECT_EQ(spec.network.mode, NetworkMode::kAllowlist);
  EXPECT_TRUE(spec.namespaces.net);
  spec = by_mode;
  ASSERT_TRUE(LoadConfigText("namespaces: {net: true}\n", "t", &spec));
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_TRUE(spec.namespaces.net);
}

TEST(NetworkConfig, ContradictingHostSettingsAreAnError) {
  EXPECT_EQ(LoadError("namespaces: {net: false}\nnetwork:\n  mode: allowlist\n  allow: [a.org]\n"),
            "t.yaml:3: network.mode: network mode allowlist contradicts namespaces.net: false "
            "(namespaces.net: false is network.mode: host); set only one of them");
  EXPECT_EQ(LoadError("network: {mode: host}\nnamespaces: {net: true}\n"),
            "t.yaml:1: network.mode: network mode host contradicts namespaces.net: true "
            "(namespaces.net: false is network.mode: host); set only one of them");
  EXPECT_EQ(LoadError("namespaces: {net: false}\nnetwork: {enabled: true}\n"),
            "t.yaml:2: network.enabled: network mode allowlist contradicts namespaces.net: "
            "false (namespaces.net: false is network.mode: host); set only one of them");
  EXPECT_EQ(LoadError("namespaces: {net: false}\nnetwork: {allow: [a.org]}\n"),
            "t.yaml:2: network.allow: network mode allowlist contradicts namespaces.net: false "
            "(namespaces.net: false is network.mode: host); set only one of them");
}

TEST(NetworkConfig, KeyPathsAreKnown) {
  const Strings paths = ConfigKeyPaths();
  for (const char* path : {"network.mode", "network.allow", "network.deny",
                           "network.max_connections", "network.max_bytes", "network.enabled",
                           "network.allow_domains", "unsafe.network_resolve.*"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), path), paths.end()) << path;
  }
}

// ---- Validate ----

using config_text::ValidSpec;

JailSpec Allowlist(Strings allow) {
  JailSpec spec = ValidSpec();
  spec.network.mode = NetworkMode::kAllowlist;
  spec.network.allow = std::move(allow);
  return spec;
}

TEST(NetworkValidate, AValidAllowlistAndHostMode) {
  JailSpec spec = Allowlist({"pypi.org", "*.github.com:443", "*", "10.1.0.0/16:5432"});
  spec.network.deny = {"evil.github.com"};
  spec.network.max_bytes = kMiB;
  EXPECT_THAT(Validate(spec), IsEmpty());

  JailSpec host = ValidSpec();
  host.network.mode = NetworkMode::kHost;
  host.namespaces.net = false;
  host.unsafe.host_network = true;
  EXPECT_THAT(Validate(host), IsEmpty());
}

TEST(NetworkValidate, ModeMustBeKnown) {
  // Refused where it is read (a JailSpec cannot hold it), in the words Validate used.
  JailSpec spec = ValidSpec();
  Status bridge = LoadConfigText("network: {mode: bridge}\n", "t.yaml", &spec);
  ASSERT_FALSE(bridge);
  EXPECT_EQ(bridge.error().message(),
            "t.yaml:1: network.mode: must be one of none, allowlist, "
            "host (got \"bridge\")");
  Status nul = LoadConfigText("network: {mode: \"none\\0x\"}\n", "t.yaml", &spec);
  ASSERT_FALSE(nul);
  EXPECT_EQ(nul.error().message(),
            "t.yaml:1: network.mode: must not contain a NUL byte (got \"none\\0x\")");
}

TEST(NetworkValidate, HostNeedsUnsafeAndNoNamespace) {
  JailSpec spec = ValidSpec();
  spec.network.mode = NetworkMode::kHost;
  spec.namespaces.net = false;
  EXPECT_THAT(Validate(spec), ElementsAre("network.mode: host (the host's network, "
                                          "namespaces.net: false) needs unsafe.host_network: "
                                          "true (got \"host\")"));
  spec.unsafe.host_network = true;
  spec.namespaces.net = true;
  EXPECT_THAT(Validate(spec), ElementsAre("network.mode: host (no network namespace) "
                                          "contradicts namespaces.net: true (got \"host\")"));
}

TEST(NetworkValidate, NoNamespaceMeansHostMode) {
  JailSpec spec = ValidSpec();
  spec.namespaces.net = false;
  spec.unsafe.host_network = true;
  spec.network.mode = NetworkMode::kAllowlist;
  spec.network.allow = {"pypi.org"};
  EXPECT_THAT(Validate(spec),
              ElementsAre("namespaces.net: false (no network namespace) contradicts "
                          "network.mode: allowlist; the host's network is network.mode: host "
                          "(got false)"));
}

TEST(NetworkValidate, EmptyAllowlist) {
  EXPECT_THAT(Validate(Allowlist({})),
              ElementsAre("network.allow: empty; nothing would be reachable - use mode none"));
  // Deny rules alone reach nothing either.
  JailSpec spec = Allowlist({});
  spec.network.deny = {"a.org"};
  EXPECT_THAT(Validate(spec), ElementsAre(StartsWith("network.allow: empty;")));
}

TEST(NetworkValidate, RulesAreParsedByThePolicyWithTheirPaths) {
  JailSpec spec = Allowlist({"pypi.org", "pypi.org:99999"});
  spec.network.deny = {"ok.org", "", "bad rule", "a*.org"};
  EXPECT_THAT(
      Validate(spec),
      ElementsAre("network.allow[1]: 'pypi.org:99999': port must be 1-65535 or *",
                  "network.deny[1]: '': empty rule",
                  "network.deny[2]: 'bad rule': not a host name (letters, digits, '-', '.'; at "
                  "most 253 characters)",
                  "network.deny[3]: 'a*.org': '*' is allowed only as a whole first label "
                  "(*.example.com)"));
}

TEST(NetworkValidate, RulesAreCheckedInEveryMode) {
  JailSpec spec = ValidSpec();
  spec.network.allow = {"pypi.org:0"};
  EXPECT_THAT(Validate(spec),
              ElementsAre("network.allow[0]: 'pypi.org:0': port must be 1-65535 or *"));
}

TEST(NetworkValidate, RuleWithANulByte) {
  JailSpec spec = Allowlist({std::string("a.org\0b", 7)});
  EXPECT_THAT(Validate(spec),
              ElementsAre("network.allow[0]: must not contain a NUL byte (got \"a.org\\0b\")"));
}

TEST(NetworkValidate, Limits) {
  JailSpec spec = ValidSpec();
  for (int64_t bad : {0, -1, 10001}) {
    spec.network.max_connections = bad;
    EXPECT_THAT(Validate(spec), ElementsAre("network.max_connections: must be 1 to 10000 (got " +
                                            std::to_string(bad) + ")"));
  }
  for (int64_t good : {1, 10000}) {
    spec.network.max_connections = good;
    EXPECT_THAT(Validate(spec), IsEmpty());
  }
  spec.network.max_bytes = 0;
  EXPECT_THAT(Validate(spec), ElementsAre("network.max_bytes: must be greater than 0 (leave it "
                                          "unset for no cap) (got 0)"));
  spec.network.max_bytes = 1;
  EXPECT_THAT(Validate(spec), IsEmpty());
}

TEST(NetworkValidate, NetworkResolve) {
  JailSpec spec = ValidSpec();
  spec.unsafe.network_resolve = {{"pypi.test", "127.0.0.1"}, {"pypi.test", "::1"}};
  EXPECT_THAT(Validate(spec), IsEmpty());
  spec.unsafe.network_resolve = {{"a.test", "1.2.3"}, {"", "1.2.3.4"}, {"b test", "1.2.3.4"}};
  EXPECT_THAT(Validate(spec),
              ElementsAre("unsafe.network_resolve.a.test: must be an IPv4 or IPv6 address (got "
                          "\"1.2.3\")",
                          "unsafe.network_resolve: a name must not be empty (got \"\")",
                          "unsafe.network_resolve.b test: is not a host name (got \"b test\")"));
  spec.unsafe.network_resolve = {{"a.test", std::string("1.2.3.4\0", 8)}};
  EXPECT_THAT(Validate(spec), ElementsAre(StartsWith("unsafe.network_resolve.a.test: must not "
                                                     "contain a NUL byte")));
}

TEST(NetworkValidate, NetworkResolveIsAWeakenedIsolation) {
  JailSpec spec = ValidSpec();
  EXPECT_THAT(WeakenedIsolation(spec), IsEmpty());
  spec.unsafe.network_resolve = {{"pypi.test", "127.0.0.1"}, {"pypi.test", "::1"}};
  EXPECT_THAT(WeakenedIsolation(spec),
              ElementsAre(StartsWith("unsafe.network_resolve: 2 fixed name -> address")));
}

// ---- --network, --allow, --deny ----

TEST(NetworkFlags, NoFlagsChangeNothing) {
  JailSpec spec;
  // A mode and namespace that disagree: not the flags' business (Validate reports it).
  spec.network.mode = NetworkMode::kAllowlist;
  spec.namespaces.net = false;
  EXPECT_THAT(ApplyNetworkFlags({}, &spec), IsEmpty());
  EXPECT_EQ(spec.network.mode, NetworkMode::kAllowlist);
  EXPECT_FALSE(spec.namespaces.net);
}

TEST(NetworkFlags, AllowImpliesAllowlistAndAddsToTheFilesRules) {
  JailSpec spec;
  spec.network.allow = {"from-file.org"};
  spec.network.deny = {"deny-file.org"};
  EXPECT_THAT(
      ApplyNetworkFlags({std::nullopt, {"pypi.org", "*.github.com"}, {"x.github.com"}}, &spec),
      IsEmpty());
  EXPECT_EQ(spec.network.mode, NetworkMode::kAllowlist);
  EXPECT_TRUE(spec.namespaces.net);
  EXPECT_EQ(spec.network.allow, (Strings{"from-file.org", "pypi.org", "*.github.com"}));
  EXPECT_EQ(spec.network.deny, (Strings{"deny-file.org", "x.github.com"}));
}

TEST(NetworkFlags, DenyAloneKeepsTheMode) {
  JailSpec spec;
  EXPECT_THAT(ApplyNetworkFlags({std::nullopt, {}, {"a.org"}}, &spec), IsEmpty());
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_EQ(spec.network.deny, Strings{"a.org"});
}

TEST(NetworkFlags, ModeOverridesTheFile) {
  JailSpec spec;
  spec.network.mode = NetworkMode::kAllowlist;
  spec.network.allow = {"pypi.org"};
  EXPECT_THAT(ApplyNetworkFlags({"none", {}, {}}, &spec), IsEmpty());
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_EQ(spec.network.allow, Strings{"pypi.org"});  // kept, unused in mode none

  EXPECT_THAT(ApplyNetworkFlags({"allowlist", {}, {}}, &spec), IsEmpty());
  EXPECT_EQ(spec.network.mode, NetworkMode::kAllowlist);
}

TEST(NetworkFlags, HostNeedsUnsafeFromTheConfigFile) {
  JailSpec spec;
  EXPECT_THAT(ApplyNetworkFlags({"host", {}, {}}, &spec),
              ElementsAre("--network host: the host's network needs unsafe.host_network: true "
                          "in a --config file"));
  EXPECT_EQ(spec.network.mode, NetworkMode::kNone);
  EXPECT_TRUE(spec.namespaces.net);

  spec.unsafe.host_network = true;
  EXPECT_THAT(ApplyNetworkFlags({"host", {}, {}}, &spec), IsEmpty());
  EXPECT_EQ(spec.network.mode, NetworkMode::kHost);
  EXPECT_FALSE(spec.namespaces.net);
  EXPECT_THAT(Validate([&] {
                JailSpec s = spec;
                s.argv = {"/bin/true"};
                return s;
              }()),
              IsEmpty());

  // --allow over a file's host mode: an allow-list, in its own namespace.
  EXPECT_THAT(ApplyNetworkFlags({std::nullopt, {"pypi.org"}, {}}, &spec), IsEmpty());
  EXPECT_EQ(spec.network.mode, NetworkMode::kAllowlist);
  EXPECT_TRUE(spec.namespaces.net);
}

TEST(NetworkFlags, Errors) {
  JailSpec spec;
  EXPECT_THAT(ApplyNetworkFlags({"bridge", {}, {}}, &spec),
              ElementsAre("--network bridge: expected none, allowlist or host"));
  EXPECT_THAT(ApplyNetworkFlags({"none", {"pypi.org"}, {}}, &spec),
              ElementsAre("--allow pypi.org: rules need --network allowlist (got --network "
                          "none)"));
  spec.unsafe.host_network = true;
  EXPECT_THAT(ApplyNetworkFlags({"host", {}, {"a.org"}}, &spec),
              ElementsAre("--deny a.org: rules need --network allowlist (got --network host)"));
  EXPECT_EQ(spec, [] {
    JailSpec s;
    s.unsafe.host_network = true;
    return s;
  }()) << "a refused flag changes nothing";
}

// ---- The JSON form (persistent sandbox records, the pool protocol) ----

TEST(NetworkJson, RoundTrips) {
  JailSpec s;
  s.network.mode = NetworkMode::kAllowlist;
  s.network.allow = {"pypi.org", "*.github.com:443"};
  s.network.deny = {"evil.github.com"};
  s.network.max_connections = 7;
  s.network.max_bytes = 100 * kMiB;
  s.unsafe.network_resolve = {{"pypi.test", "127.0.0.1"}, {"pypi.test", "::1"}};
  Result<JailSpec> back = SpecFromJson(SpecToJson(s));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, s);

  s.network.max_bytes.reset();
  back = SpecFromJson(SpecToJson(s));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->network.max_bytes, std::nullopt);
}

// A record written before the network keys existed.
std::string OldRecord(bool net_namespace) {
  JailSpec s;
  s.argv = {"sleep", "1"};
  s.namespaces.net = net_namespace;
  s.unsafe.host_network = !net_namespace;
  nlohmann::json j = nlohmann::json::parse(SpecToJson(s));
  j.erase("network");
  j["unsafe"].erase("network_resolve");
  return j.dump();
}

TEST(NetworkJson, OldRecordsLoadWithDefaults) {
  Result<JailSpec> back = SpecFromJson(OldRecord(/*net_namespace=*/true));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->network, NetworkSpec{});
  EXPECT_THAT(back->unsafe.network_resolve, IsEmpty());
  EXPECT_EQ(back->argv, (Strings{"sleep", "1"}));

  // One without a network namespace had the host's network: that is mode host now.
  back = SpecFromJson(OldRecord(/*net_namespace=*/false));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->network.mode, NetworkMode::kHost);
  EXPECT_FALSE(back->namespaces.net);
}

TEST(NetworkJson, BadValuesAreErrors) {
  nlohmann::json j = nlohmann::json::parse(SpecToJson(JailSpec{}));
  j["network"]["max_connections"] = 1e30;
  EXPECT_FALSE(SpecFromJson(j.dump()));
  j = nlohmann::json::parse(SpecToJson(JailSpec{}));
  j["network"]["max_bytes"] = 6.5e96;
  EXPECT_FALSE(SpecFromJson(j.dump()));
  j = nlohmann::json::parse(SpecToJson(JailSpec{}));
  j["network"]["allow"] = "pypi.org";
  EXPECT_FALSE(SpecFromJson(j.dump()));
  j = nlohmann::json::parse(SpecToJson(JailSpec{}));
  j["network"]["allow"] = {std::string("a\0b", 3)};
  Result<JailSpec> nul = SpecFromJson(j.dump());
  ASSERT_FALSE(nul);
  EXPECT_THAT(nul.error().message(), HasSubstr("NUL"));
}

}  // namespace
}  // namespace corral::runtime
