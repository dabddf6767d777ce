// The allow-list policy (runtime/net/policy.h): rule syntax, matching, the ranges that are
// never reached, and the JSON form the proxy process receives.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/net/policy.h"
#include "runtime/net/rules.h"

namespace corral::runtime::net {
namespace {

Policy Make(std::vector<std::string> allow, std::vector<std::string> deny = {},
            std::vector<std::pair<std::string, std::string>> resolve = {}) {
  NetworkSpec n;
  n.mode = NetworkMode::kAllowlist;
  n.allow = std::move(allow);
  n.deny = std::move(deny);
  UnsafeSpec u;
  u.network_resolve = std::move(resolve);
  auto p = Policy::FromSpec(n, u);
  EXPECT_TRUE(p) << p.error().message();
  return *p;
}

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }

TEST(NetPolicyTest, RuleSyntax) {
  auto r = ParseRule("PyPI.org.");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, Rule::Kind::kName);
  EXPECT_EQ(r->name, "pypi.org");
  EXPECT_FALSE(r->port);
  r = ParseRule("*.github.com:443");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, Rule::Kind::kSubdomains);
  EXPECT_EQ(r->name, "github.com");
  EXPECT_EQ(r->port, 443);
  r = ParseRule("10.1.0.0/16:5432");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, Rule::Kind::kCidr);
  r = ParseRule("[fd00::/8]:5432");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->network.prefix, 8);
  r = ParseRule("*:*");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->any_port);

  for (const char* bad : {"", "pypi.org:0", "pypi.org:65536", "pypi.org:x", "a*.b.com",
                          "10.0.0.0/33", "bad host", "-", "*.", "a..b"}) {
    auto e = ParseRule(bad);
    EXPECT_FALSE(e) << bad;
  }
  EXPECT_EQ(ParseRule("pypi.org:99999").error().message(),
            "'pypi.org:99999': port must be 1-65535 or *");
}

TEST(NetPolicyTest, FieldPathsInErrors) {
  NetworkSpec n;
  n.allow = {"pypi.org", "x:0"};
  auto p = Policy::FromSpec(n, {});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message(), "network.allow[1]: 'x:0': port must be 1-65535 or *");
  n.allow = {"pypi.org"};
  n.deny = {"a*b"};
  EXPECT_NE(Policy::FromSpec(n, {}).error().message().find("network.deny[0]"), std::string::npos);
  UnsafeSpec u;
  u.network_resolve = {{"allowed.test", "not-an-ip"}};
  n.deny.clear();
  EXPECT_NE(Policy::FromSpec(n, u).error().message().find("unsafe.network_resolve.allowed.test"),
            std::string::npos);
}

TEST(NetPolicyTest, NamesPortsAndDenyWins) {
  Policy p = Make({"pypi.org", "*.github.com:443", "api.example.com:8443", "db.example.com:*"},
                  {"evil.github.com"});
  EXPECT_TRUE(p.CheckName("pypi.org", 443).allowed);
  EXPECT_TRUE(p.CheckName("PYPI.ORG.", 80).allowed);
  EXPECT_EQ(p.CheckName("pypi.org", 22).reason, "port 22 not allowed for pypi.org");
  EXPECT_TRUE(p.CheckName("codeload.github.com", 443).allowed);
  EXPECT_FALSE(p.CheckName("codeload.github.com", 80).allowed);
  EXPECT_FALSE(p.CheckName("github.com", 443).allowed);  // *.x is below x only
  EXPECT_FALSE(p.CheckName("notgithub.com", 443).allowed);
  EXPECT_EQ(p.CheckName("evil.github.com", 443).reason, "denied by 'evil.github.com'");
  EXPECT_TRUE(p.CheckName("api.example.com", 8443).allowed);
  EXPECT_FALSE(p.CheckName("api.example.com", 443).allowed);
  EXPECT_TRUE(p.CheckName("db.example.com", 5432).allowed);
  EXPECT_EQ(p.CheckName("unknown.org", 443).reason, "not on the allow-list");
  EXPECT_FALSE(p.CheckName("", 443).allowed);
  EXPECT_FALSE(p.CheckName("bad name", 443).allowed);

  EXPECT_TRUE(p.NameAllowed("pypi.org"));
  EXPECT_TRUE(p.NameAllowed("x.github.com"));
  EXPECT_FALSE(p.NameAllowed("evil.github.com"));
  EXPECT_FALSE(p.NameAllowed("unknown.org"));
  EXPECT_EQ(p.CapturePorts("pypi.org"), (std::vector<uint16_t>{80, 443}));
  EXPECT_EQ(p.CapturePorts("x.github.com"), (std::vector<uint16_t>{443}));
  EXPECT_EQ(p.CapturePorts("api.example.com"), (std::vector<uint16_t>{8443}));
  EXPECT_TRUE(p.CapturePorts("unknown.org").empty());
}

TEST(NetPolicyTest, StarMeansPublicAddressesOnly) {
  Policy p = Make({"*"});
  EXPECT_TRUE(p.CheckName("anything.example", 443).allowed);
  EXPECT_FALSE(p.CheckName("anything.example", 22).allowed);
  EXPECT_TRUE(p.CheckAddress("anything.example", Ip("93.184.216.34"), 443).allowed);
  EXPECT_TRUE(p.CheckAddress("anything.example", Ip("2606:2800:220:1::1"), 443).allowed);
  struct Case {
    const char* ip;
    const char* range;
  };
  for (Case c : {Case{"169.254.169.254", "cloud metadata"},
                 Case{"fd00:ec2::254", "cloud metadata"},
                 Case{"127.0.0.1", "loopback"},
                 Case{"127.9.9.9", "loopback"},
                 Case{"::1", "loopback"},
                 Case{"::ffff:127.0.0.1", "loopback"},
                 Case{"10.0.0.1", "private"},
                 Case{"172.16.5.4", "private"},
                 Case{"172.31.255.255", "private"},
                 Case{"192.168.1.1", "private"},
                 Case{"100.64.0.1", "private"},
                 Case{"fd12::1", "private"},
                 Case{"169.254.1.1", "link-local"},
                 Case{"fe80::1", "link-local"},
                 Case{"0.0.0.0", "unspecified"},
                 Case{"::", "unspecified"},
                 Case{"224.0.0.1", "multicast"},
                 Case{"ff02::1", "multicast"},
                 Case{"255.255.255.255", "reserved"},
                 Case{"2001:db8::1", "reserved"}}) {
    EXPECT_EQ(ForbiddenRange(Ip(c.ip)), c.range) << c.ip;
    EXPECT_FALSE(p.CheckAddress("anything.example", Ip(c.ip), 443).allowed) << c.ip;
  }
  EXPECT_EQ(ForbiddenRange(Ip("172.32.0.1")), "");
  EXPECT_EQ(ForbiddenRange(Ip("8.8.8.8")), "");
}

// Brackets wrap an IP literal only: a query for the DNS name "[x]" is not judged as "x"
// (a fuzz_netproxy_dns finding).
TEST(NetPolicyTest, BracketsAroundANameAreNotStripped) {
  EXPECT_EQ(NormalizeHost("[::1]"), "::1");
  EXPECT_EQ(NormalizeHost("[10.0.0.1]"), "10.0.0.1");
  EXPECT_EQ(NormalizeHost("[xampl]"), "");
  EXPECT_EQ(NormalizeHost("[example.com]"), "");
  EXPECT_EQ(NormalizeHost("Example.COM."), "example.com");
}

TEST(NetPolicyTest, IpLiteralsNeedACidrRule) {
  Policy p = Make({"*", "10.1.0.0/16:5432", "[fd00:1::/32]:5432"}, {"10.1.9.0/24"});
  EXPECT_EQ(p.CheckName("93.184.216.34", 443).reason,
            "IP address not allowed (only a CIDR rule allows an address)");
  EXPECT_TRUE(p.CheckName("10.1.2.3", 5432).allowed);
  EXPECT_FALSE(p.CheckName("10.1.2.3", 5433).allowed);
  EXPECT_EQ(p.CheckName("10.1.9.3", 5432).reason, "denied by '10.1.9.0/24'");
  EXPECT_TRUE(p.CheckName("[fd00:1::5]", 5432).allowed);
  // A private address reached by name: allowed only where a CIDR rule covers it.
  EXPECT_TRUE(p.CheckAddress("db.internal", Ip("10.1.2.3"), 5432).allowed);
  EXPECT_FALSE(p.CheckAddress("db.internal", Ip("10.2.2.3"), 5432).allowed);
  EXPECT_FALSE(p.CheckAddress("db.internal", Ip("10.1.9.3"), 5432).allowed);
  // A CIDR rule never opens loopback or metadata.
  Policy wide = Make({"0.0.0.0/0:*"});
  EXPECT_FALSE(wide.CheckAddress("x", Ip("127.0.0.1"), 80).allowed);
  EXPECT_FALSE(wide.CheckAddress("x", Ip("169.254.169.254"), 80).allowed);
}

TEST(NetPolicyTest, TestOverridesAndNever) {
  Policy p = Make({"allowed.test:*"}, {}, {{"allowed.test", "127.0.0.1"}});
  ASSERT_TRUE(p.Override("ALLOWED.test"));
  EXPECT_EQ(p.Override("allowed.test")->at(0).ToString(), "127.0.0.1");
  EXPECT_FALSE(p.Override("other.test"));
  EXPECT_TRUE(p.CheckAddress("allowed.test", Ip("127.0.0.1"), 8080).allowed);
  EXPECT_FALSE(p.CheckAddress("other.test", Ip("127.0.0.1"), 8080).allowed);
  p.AddNever(Ip("127.0.0.1"), 8421);
  EXPECT_EQ(p.CheckAddress("allowed.test", Ip("127.0.0.1"), 8421).reason,
            "corral's own API address");
  EXPECT_TRUE(p.CheckAddress("allowed.test", Ip("127.0.0.1"), 8080).allowed);
}

TEST(NetPolicyTest, JsonRoundTrip) {
  Policy p = Make({"pypi.org", "10.0.0.0/8:22"}, {"evil.pypi.org"}, {{"pypi.org", "127.0.0.1"}});
  p.AddNever(Ip("::1"), 0);
  auto back = Policy::FromJson(nlohmann::json::parse(p.ToJson().dump()));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->ToJson(), p.ToJson());
  EXPECT_FALSE(back->CheckAddress("pypi.org", Ip("::1"), 443).allowed);
  EXPECT_FALSE(Policy::FromJson(nlohmann::json{{"allow", 1}}));
}

}  // namespace
}  // namespace corral::runtime::net
