#include <gtest/gtest.h>
#include <ldns/ldns.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "runtime/netproxy/dns_answer.h"

namespace corral::runtime::net {
namespace {

using Bytes = std::vector<uint8_t>;

struct PacketFree {
  void operator()(ldns_pkt* p) const { ldns_pkt_free(p); }
};
using Packet = std::unique_ptr<ldns_pkt, PacketFree>;

Bytes Wire(const ldns_pkt* p) {
  uint8_t* wire = nullptr;
  size_t size = 0;
  EXPECT_EQ(ldns_pkt2wire(&wire, p, &size), LDNS_STATUS_OK);
  Bytes out(wire, wire + size);
  std::free(wire);
  return out;
}

Packet NewQuery(const char* name, ldns_rr_type type, ldns_rr_class klass = LDNS_RR_CLASS_IN) {
  Packet p(ldns_pkt_query_new(ldns_dname_new_frm_str(name), type, klass, LDNS_RD));
  ldns_pkt_set_id(p.get(), 0x1234);
  return p;
}

Bytes Query(const char* name, ldns_rr_type type, ldns_rr_class klass = LDNS_RR_CLASS_IN) {
  return Wire(NewQuery(name, type, klass).get());
}

Packet ParseReply(const Bytes& wire) {
  ldns_pkt* p = nullptr;
  EXPECT_EQ(ldns_wire2pkt(&p, wire.data(), wire.size()), LDNS_STATUS_OK);
  return Packet(p);
}

IpAddress Capture() { return *IpAddress::Parse("127.100.0.7"); }

TEST(NetDnsAnswer, AnAllowedNameGetsItsCaptureAddress) {
  std::optional<DnsQuery> q = DnsQuery::Parse(Query("PyPI.org.", LDNS_RR_TYPE_A));
  ASSERT_TRUE(q);
  EXPECT_EQ(q->name(), "pypi.org");
  EXPECT_EQ(q->type(), kDnsTypeA);
  ASSERT_EQ(DecideDnsAnswer(*q, true), DnsAnswerKind::kAddress);
  Packet reply = ParseReply(q->Reply(DnsAnswerKind::kAddress, Capture()));
  ASSERT_TRUE(reply);
  EXPECT_EQ(ldns_pkt_id(reply.get()), 0x1234);
  EXPECT_TRUE(ldns_pkt_qr(reply.get()));
  EXPECT_TRUE(ldns_pkt_rd(reply.get()));
  EXPECT_EQ(ldns_pkt_get_rcode(reply.get()), LDNS_RCODE_NOERROR);
  ASSERT_EQ(ldns_pkt_qdcount(reply.get()), 1);
  ASSERT_EQ(ldns_pkt_ancount(reply.get()), 1);
  const ldns_rr* a = ldns_rr_list_rr(ldns_pkt_answer(reply.get()), 0);
  EXPECT_EQ(ldns_rr_get_type(a), LDNS_RR_TYPE_A);
  EXPECT_EQ(ldns_rr_ttl(a), kCaptureTtlSeconds);
  const ldns_rdf* data = ldns_rr_rdf(a, 0);
  ASSERT_EQ(ldns_rdf_size(data), 4u);
  EXPECT_EQ(Bytes(ldns_rdf_data(data), ldns_rdf_data(data) + 4), (Bytes{127, 100, 0, 7}));
}

TEST(NetDnsAnswer, OtherTypesOfAnAllowedNameHaveNoData) {
  for (ldns_rr_type type : {LDNS_RR_TYPE_AAAA, LDNS_RR_TYPE_MX, static_cast<ldns_rr_type>(65)}) {
    std::optional<DnsQuery> q = DnsQuery::Parse(Query("pypi.org.", type));
    ASSERT_TRUE(q);
    ASSERT_EQ(DecideDnsAnswer(*q, true), DnsAnswerKind::kNoData);
    Packet reply = ParseReply(q->Reply(DnsAnswerKind::kNoData, std::nullopt));
    EXPECT_EQ(ldns_pkt_get_rcode(reply.get()), LDNS_RCODE_NOERROR);
    EXPECT_EQ(ldns_pkt_ancount(reply.get()), 0);
  }
}

TEST(NetDnsAnswer, ANameNotAllowedDoesNotExist) {
  for (ldns_rr_type type : {LDNS_RR_TYPE_A, LDNS_RR_TYPE_AAAA, LDNS_RR_TYPE_TXT}) {
    std::optional<DnsQuery> q = DnsQuery::Parse(Query("evil.example.", type));
    ASSERT_TRUE(q);
    ASSERT_EQ(DecideDnsAnswer(*q, false), DnsAnswerKind::kNameError);
    Packet reply = ParseReply(q->Reply(DnsAnswerKind::kNameError, std::nullopt));
    EXPECT_EQ(ldns_pkt_get_rcode(reply.get()), LDNS_RCODE_NXDOMAIN);
    EXPECT_EQ(ldns_pkt_ancount(reply.get()), 0);
  }
}

TEST(NetDnsAnswer, QueriesThatCannotBeAnsweredByName) {
  std::optional<DnsQuery> chaos =
      DnsQuery::Parse(Query("version.bind.", LDNS_RR_TYPE_TXT, LDNS_RR_CLASS_CH));
  ASSERT_TRUE(chaos);
  EXPECT_EQ(DecideDnsAnswer(*chaos, true), DnsAnswerKind::kRefused);

  Packet notify = NewQuery("pypi.org.", LDNS_RR_TYPE_SOA);
  ldns_pkt_set_opcode(notify.get(), LDNS_PACKET_NOTIFY);
  std::optional<DnsQuery> q = DnsQuery::Parse(Wire(notify.get()));
  ASSERT_TRUE(q);
  EXPECT_EQ(DecideDnsAnswer(*q, true), DnsAnswerKind::kNotImplemented);

  Packet two = NewQuery("a.org.", LDNS_RR_TYPE_A);
  ldns_pkt_push_rr(two.get(), LDNS_SECTION_QUESTION,
                   ldns_rr_clone(ldns_rr_list_rr(ldns_pkt_question(two.get()), 0)));
  q = DnsQuery::Parse(Wire(two.get()));
  ASSERT_TRUE(q);
  ASSERT_EQ(DecideDnsAnswer(*q, true), DnsAnswerKind::kFormatError);
  Packet reply = ParseReply(q->Reply(DnsAnswerKind::kFormatError, std::nullopt));
  EXPECT_EQ(ldns_pkt_get_rcode(reply.get()), LDNS_RCODE_FORMERR);
}

TEST(NetDnsAnswer, ResponsesAndGarbageAreDropped) {
  Packet response = NewQuery("pypi.org.", LDNS_RR_TYPE_A);
  ldns_pkt_set_qr(response.get(), true);
  EXPECT_FALSE(DnsQuery::Parse(Wire(response.get())));
  EXPECT_FALSE(DnsQuery::Parse(Bytes{}));
  EXPECT_FALSE(DnsQuery::Parse(Bytes{1, 2, 3}));
  const Bytes good = Query("pypi.org.", LDNS_RR_TYPE_A);
  EXPECT_FALSE(DnsQuery::Parse(Bytes(good.begin(), good.end() - 3))) << "truncated question";
}

TEST(NetDnsAnswer, SurvivesGarbageAndMutations) {
  std::mt19937 random(53);
  const Bytes good = Query("mutate.example.org.", LDNS_RR_TYPE_A);
  for (int i = 0; i < 5000; ++i) {
    Bytes data;
    if (i % 2 == 0) {
      data.resize(random() % 200);
      for (uint8_t& b : data) b = static_cast<uint8_t>(random());
    } else {
      data = good;
      for (int flips = 1 + static_cast<int>(random() % 3); flips > 0; --flips) {
        data[random() % data.size()] = static_cast<uint8_t>(random());
      }
    }
    std::optional<DnsQuery> q = DnsQuery::Parse(data);
    if (!q) continue;
    const DnsAnswerKind kind = DecideDnsAnswer(*q, i % 3 == 0);
    const Bytes reply = q->Reply(kind, Capture());
    if (!reply.empty()) {
      ASSERT_TRUE(ParseReply(reply));
    }
  }
}

}  // namespace
}  // namespace corral::runtime::net
