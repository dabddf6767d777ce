// The proxy's bookkeeping: capture addresses, the summary's counters and its file.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/netproxy/proxy_capture.h"
#include "runtime/netproxy/proxy_log.h"
#include "runtime/netproxy/proxy_summary.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime::net {
namespace {

TEST(NetCaptureTable, OneStableAddressPerName) {
  CaptureTable table;
  std::optional<IpAddress> a = table.AddressFor("pypi.org");
  std::optional<IpAddress> b = table.AddressFor("files.pythonhosted.org");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->ToString(), "127.100.0.1");
  EXPECT_EQ(b->ToString(), "127.100.0.2");
  EXPECT_EQ(table.AddressFor("pypi.org")->ToString(), "127.100.0.1");
  EXPECT_EQ(table.NameAt(*a), "pypi.org");
  EXPECT_FALSE(table.NameAt(*IpAddress::Parse("127.100.0.3")));
  EXPECT_FALSE(table.NameAt(*IpAddress::Parse("127.0.0.1")));
  EXPECT_FALSE(table.Listening("pypi.org"));
  table.SetListening("pypi.org");
  EXPECT_TRUE(table.Listening("pypi.org"));
}

TEST(NetCaptureTable, RunsOutAfterTheLimit) {
  CaptureTable table;
  for (size_t i = 0; i < kMaxCaptureNames; ++i) {
    ASSERT_TRUE(table.AddressFor("n" + std::to_string(i) + ".example")) << i;
  }
  EXPECT_EQ(table.AddressFor("n300.example")->ToString(), "127.100.1.45") << "256 + 45 = 301st";
  EXPECT_FALSE(table.AddressFor("one-more.example"));
}

Decision Deny(const std::string& host, const std::string& via = "http") {
  return {via, host, 80, false, "no", ""};
}

TEST(NetProxyStats, CountsAndListsDistinctRefusals) {
  ProxyStats stats;
  stats.Count({"http", "a.org", 80, true, "", "1.2.3.4"});
  stats.Count(Deny("evil.org"));
  stats.Count(Deny("evil.org"));
  stats.Count(Deny("evil.org", "dns"));
  stats.Count({"dns", "a.org", 0, true, "", "127.100.0.1"});
  stats.AddBytes(10, 20);
  nlohmann::json j = stats.ToJson();
  EXPECT_EQ(j["mode"], "allowlist");
  EXPECT_EQ(j["connections"], 3) << j;
  EXPECT_EQ(j["allowed"], 1) << j;
  EXPECT_EQ(j["denied_count"], 3) << j;
  ASSERT_EQ(j["denied"].size(), 2u) << j;
  EXPECT_EQ(
      j["denied"][0],
      (nlohmann::json{{"host", "evil.org"}, {"port", 80}, {"reason", "no"}, {"via", "http"}}));
  EXPECT_EQ(j["bytes_out"], 10);
  EXPECT_EQ(j["bytes_in"], 20);
}

TEST(NetProxyStats, ListsAtMostTheFirstFifty) {
  ProxyStats stats;
  for (int i = 0; i < 80; ++i) stats.Count(Deny("h" + std::to_string(i) + ".org"));
  nlohmann::json j = stats.ToJson();
  EXPECT_EQ(j["denied_count"], 80);
  ASSERT_EQ(j["denied"].size(), kMaxDeniedListed);
  EXPECT_EQ(j["denied"][0]["host"], "h0.org");
}

TEST(NetProxyStats, WritesTheSummaryFileWhole) {
  test::TempDir dir;
  ProxyStats stats;
  stats.Count(Deny("evil.org"));
  EXPECT_TRUE(stats.dirty());
  const std::string path = dir.Join("summary.json");
  ASSERT_TRUE(stats.WriteTo(path));
  EXPECT_FALSE(stats.dirty());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text.str();
  EXPECT_EQ(j["denied_count"], 1);
  EXPECT_FALSE(std::ifstream(path + ".tmp").good()) << "the temporary file is renamed";
  EXPECT_FALSE(stats.WriteTo(dir.Join("missing/summary.json")));
}

TEST(NetDecisionLog, OneJsonObjectPerLine) {
  test::TempDir dir;
  const std::string path = dir.Join("log.jsonl");
  Result<DecisionLog> log = DecisionLog::Open(path, "box");
  ASSERT_TRUE(log) << log.error().message();
  log->Record(Decision{"socks", "a.org", 443, true, "", "1.2.3.4"});
  log->Record(Decision{"dns", std::string("bad\xff\n", 5), 0, false, "not on the allow-list", ""});
  ConnectionEnd end;
  end.via = "socks";
  end.host = "a.org";
  end.port = 443;
  end.address = "1.2.3.4";
  end.bytes_out = 5;
  end.bytes_in = 7;
  log->Record(end);
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line, nullptr, false));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["decision"], "allow");
  EXPECT_EQ(lines[0]["address"], "1.2.3.4");
  EXPECT_EQ(lines[0]["sandbox"], "box");
  EXPECT_FALSE(lines[0].contains("reason"));
  EXPECT_EQ(lines[1]["decision"], "deny");
  EXPECT_EQ(lines[1]["port"], 0);
  EXPECT_EQ(lines[2]["event"], "close");
  EXPECT_EQ(lines[2]["bytes_in"], 7);
  const std::string time = lines[0]["time"];
  EXPECT_EQ(time.size(), 24u) << time;
  EXPECT_EQ(time.back(), 'Z');
}

}  // namespace
}  // namespace corral::runtime::net
