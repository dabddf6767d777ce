#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "runtime/netproxy/proxy_socks_wire.h"

namespace corral::runtime::net {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(NetSocksWire, GreetingOffersNoAuthOrNot) {
  SocksGreeting g;
  EXPECT_EQ(ParseSocksGreeting(Bytes{5, 2, 2, 0}, &g), SocksParse::kOk);
  EXPECT_TRUE(g.offers_no_auth);
  EXPECT_EQ(g.consumed, 4u);
  EXPECT_EQ(ParseSocksGreeting(Bytes{5, 1, 2, 9, 9}, &g), SocksParse::kOk);
  EXPECT_FALSE(g.offers_no_auth);
  EXPECT_EQ(g.consumed, 3u) << "bytes after the greeting are not part of it";
}

TEST(NetSocksWire, GreetingNeedsMoreOrIsBad) {
  SocksGreeting g;
  EXPECT_EQ(ParseSocksGreeting(Bytes{}, &g), SocksParse::kNeedMore);
  EXPECT_EQ(ParseSocksGreeting(Bytes{5}, &g), SocksParse::kNeedMore);
  EXPECT_EQ(ParseSocksGreeting(Bytes{5, 3, 0}, &g), SocksParse::kNeedMore);
  EXPECT_EQ(ParseSocksGreeting(Bytes{4}, &g), SocksParse::kBad) << "SOCKS4";
  EXPECT_EQ(ParseSocksGreeting(Bytes{'G', 'E'}, &g), SocksParse::kBad) << "HTTP";
  EXPECT_EQ(ParseSocksGreeting(Bytes{5, 0}, &g), SocksParse::kBad) << "no methods";
}

TEST(NetSocksWire, RequestWithADomainName) {
  const Bytes data = {5, 1, 0, 3, 8, 'p', 'y', 'p', 'i', '.', 'o', 'r', 'g', 0x01, 0xBB, 0x16};
  SocksRequest r;
  ASSERT_EQ(ParseSocksRequest(data, &r), SocksParse::kOk);
  EXPECT_EQ(r.command, 1);
  EXPECT_EQ(r.address_type, 3);
  EXPECT_EQ(r.host, "pypi.org");
  EXPECT_EQ(r.port, 443);
  EXPECT_EQ(r.consumed, data.size() - 1);
  for (size_t n = 0; n + 1 < data.size(); ++n) {
    EXPECT_EQ(ParseSocksRequest(Bytes(data.begin(), data.begin() + static_cast<ptrdiff_t>(n)), &r),
              SocksParse::kNeedMore)
        << n;
  }
}

TEST(NetSocksWire, RequestWithAddresses) {
  SocksRequest r;
  ASSERT_EQ(ParseSocksRequest(Bytes{5, 1, 0, 1, 169, 254, 169, 254, 0, 80}, &r), SocksParse::kOk);
  EXPECT_EQ(r.host, "169.254.169.254");
  EXPECT_EQ(r.port, 80);
  Bytes v6 = {5, 1, 0, 4};
  for (int i = 0; i < 15; ++i) v6.push_back(0);
  v6.push_back(1);
  v6.push_back(0x1F);
  v6.push_back(0x90);
  ASSERT_EQ(ParseSocksRequest(v6, &r), SocksParse::kOk);
  EXPECT_EQ(r.host, "::1");
  EXPECT_EQ(r.port, 8080);
}

TEST(NetSocksWire, OtherCommandsAndAddressTypesAreReportedNotGuessed) {
  SocksRequest r;
  ASSERT_EQ(ParseSocksRequest(Bytes{5, 3, 0, 1, 1, 2, 3, 4, 0, 53}, &r), SocksParse::kOk);
  EXPECT_EQ(r.command, 3) << "UDP ASSOCIATE: the caller answers 0x07";
  ASSERT_EQ(ParseSocksRequest(Bytes{5, 1, 0, 9, 1, 2}, &r), SocksParse::kOk);
  EXPECT_EQ(r.address_type, 9);
  EXPECT_TRUE(r.host.empty());
  EXPECT_EQ(r.consumed, 4u);
}

TEST(NetSocksWire, BadRequests) {
  SocksRequest r;
  EXPECT_EQ(ParseSocksRequest(Bytes{4, 1, 0, 1}, &r), SocksParse::kBad);
  EXPECT_EQ(ParseSocksRequest(Bytes{5, 1, 7, 1}, &r), SocksParse::kBad) << "reserved byte";
  EXPECT_EQ(ParseSocksRequest(Bytes{5, 1, 0, 3, 0, 0, 80}, &r), SocksParse::kBad) << "empty name";
}

TEST(NetSocksWire, Replies) {
  EXPECT_EQ(SocksMethodReply(true), (Bytes{5, 0}));
  EXPECT_EQ(SocksMethodReply(false), (Bytes{5, 0xFF}));
  EXPECT_EQ(SocksRequestReply(SocksReply::kNotAllowed), (Bytes{5, 2, 0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(SocksRequestReply(SocksReply::kSucceeded)[1], 0);
}

TEST(NetSocksWire, SurvivesGarbage) {
  std::mt19937 random(7);
  for (int i = 0; i < 20000; ++i) {
    Bytes data(random() % 300);
    for (uint8_t& b : data) b = static_cast<uint8_t>(random());
    if (!data.empty() && i % 2 == 0) data[0] = 5;
    SocksGreeting g;
    if (ParseSocksGreeting(data, &g) == SocksParse::kOk) {
      ASSERT_LE(g.consumed, data.size());
    }
    SocksRequest r;
    if (ParseSocksRequest(data, &r) == SocksParse::kOk) {
      ASSERT_LE(r.consumed, data.size());
    }
  }
}

}  // namespace
}  // namespace corral::runtime::net
