// The in-jail resolver's DNS messages (runtime/netproxy/dns_answer.h): a query from the
// sandbox parsed with ldns, and every answer the resolver can give it. A parsed query's
// name is in the form the policy is asked about (lower case, no trailing dot); the
// decision agrees with Problem(); every reply is a DNS response ldns reads back, with the
// query's id, the rcode of its kind, the question echoed when there was exactly one, an A
// record only for kAddress; and a reply fed back in is dropped as a response.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/net/rules.h"
#include "runtime/netproxy/dns_answer.h"
#include "tests/fuzz/fuzz_util.h"

// After the C++ headers: ldns's headers define macros (bool, ...) that break libstdc++'s.
#include <ldns/ldns.h>

namespace {

using namespace corral::runtime::net;
using corral::fuzz::Fail;

struct PacketFree {
  void operator()(ldns_pkt* p) const { ldns_pkt_free(p); }
};

uint8_t ExpectedRcode(DnsAnswerKind kind) {
  switch (kind) {
    case DnsAnswerKind::kAddress:
    case DnsAnswerKind::kNoData:
      return LDNS_RCODE_NOERROR;
    case DnsAnswerKind::kNameError:
      return LDNS_RCODE_NXDOMAIN;
    case DnsAnswerKind::kFormatError:
      return LDNS_RCODE_FORMERR;
    case DnsAnswerKind::kNotImplemented:
      return LDNS_RCODE_NOTIMPL;
    case DnsAnswerKind::kRefused:
      return LDNS_RCODE_REFUSED;
    case DnsAnswerKind::kServerFailure:
      return LDNS_RCODE_SERVFAIL;
  }
  return 0xFF;
}

void CheckReply(const ldns_pkt* query, const DnsQuery& parsed, DnsAnswerKind kind,
                const IpAddress& capture) {
  const std::vector<uint8_t> wire = parsed.Reply(kind, capture);
  if (wire.empty()) return;  // an ldns failure: the resolver drops the query
  const std::string what =
      "kind " + std::to_string(static_cast<int>(kind)) + " name '" + parsed.name() + "'";
  ldns_pkt* raw = nullptr;
  if (ldns_wire2pkt(&raw, wire.data(), wire.size()) != LDNS_STATUS_OK) {
    if (raw != nullptr) ldns_pkt_free(raw);
    Fail("reply is not a DNS message", what);
  }
  std::unique_ptr<ldns_pkt, PacketFree> reply(raw);
  if (!ldns_pkt_qr(raw) || ldns_pkt_id(raw) != ldns_pkt_id(query))
    Fail("reply: QR unset or another id", what);
  if (ldns_pkt_get_rcode(raw) != ExpectedRcode(kind)) Fail("reply: rcode is not its kind's", what);
  const bool one_question = ldns_pkt_qdcount(query) == 1;
  if (ldns_pkt_qdcount(raw) != (one_question ? 1 : 0))
    Fail("reply: question not echoed exactly once", what);
  if (one_question) {
    const ldns_rr* asked = ldns_rr_list_rr(ldns_pkt_question(query), 0);
    const ldns_rr* echoed = ldns_rr_list_rr(ldns_pkt_question(raw), 0);
    if (ldns_rdf_compare(ldns_rr_owner(asked), ldns_rr_owner(echoed)) != 0 ||
        ldns_rr_get_type(asked) != ldns_rr_get_type(echoed)) {
      Fail("reply: the echoed question is another", what);
    }
  }
  const size_t answers = ldns_pkt_ancount(raw);
  const size_t expected = kind == DnsAnswerKind::kAddress && one_question ? 1 : 0;
  if (answers != expected)
    Fail("reply: answer count not as the kind says", what + " " + std::to_string(answers));
  if (answers == 1) {
    const ldns_rr* a = ldns_rr_list_rr(ldns_pkt_answer(raw), 0);
    const ldns_rdf* data = ldns_rr_rdf(a, 0);
    if (ldns_rr_get_type(a) != LDNS_RR_TYPE_A || data == nullptr || ldns_rdf_size(data) != 4 ||
        std::memcmp(ldns_rdf_data(data), capture.bytes.data(), 4) != 0 ||
        ldns_rr_ttl(a) != kCaptureTtlSeconds) {
      Fail("reply: the A record is not the capture address", what);
    }
  }
  if (ldns_pkt_nscount(raw) != 0 || ldns_pkt_arcount(raw) != 0)
    Fail("reply: authority or additional records", what);
  if (DnsQuery::Parse(wire)) Fail("a reply parses as a query (QR set)", what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> wire(data, size);
  std::optional<DnsQuery> query = DnsQuery::Parse(wire);
  if (!query) return 0;
  const std::string& name = query->name();
  // dns_answer.h: lower case, the root's dot dropped. A dot that is part of a label is
  // escaped (a\. for the label "a."): the name ends with an unescaped dot never.
  size_t backslashes = 0;
  for (size_t i = name.size(); i >= 2 && name[i - 2] == '\\'; --i) ++backslashes;
  if (!name.empty() && name.back() == '.' && backslashes % 2 == 0)
    Fail("query name ends with the root's dot", name);
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') Fail("query name is not lower case", name);
  }
  // The resolver asks the policy about this name. What the policy accepts of it
  // (NormalizeHost) must be a DNS name, and the very name the query asks for: an escaped
  // byte must never turn into a label separator or vanish on the way.
  const std::string normal = NormalizeHost(name);
  if (!normal.empty() && !IpAddress::Parse(name)) {
    if (!IsDnsName(normal)) Fail("policy accepts a non-name", name);
    ldns_rdf* as_policy = ldns_dname_new_frm_str(normal.c_str());
    if (as_policy == nullptr) Fail("ldns cannot read the name the policy accepts", normal);
    ldns_pkt* again = nullptr;
    const bool same =
        ldns_wire2pkt(&again, data, size) == LDNS_STATUS_OK &&
        ldns_dname_compare(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(again), 0)),
                           as_policy) == 0;
    ldns_rdf_deep_free(as_policy);
    if (again != nullptr) ldns_pkt_free(again);
    if (!same)
      Fail("the policy is asked about another name than the query's", name + " vs " + normal);
  }

  const std::optional<DnsAnswerKind> problem = query->Problem();
  for (bool allowed : {false, true}) {
    const DnsAnswerKind kind = DecideDnsAnswer(*query, allowed);
    if (problem && kind != *problem) Fail("decision ignores the query's problem", name);
    if (!problem) {
      const DnsAnswerKind want = !allowed                     ? DnsAnswerKind::kNameError
                                 : query->type() == kDnsTypeA ? DnsAnswerKind::kAddress
                                                              : DnsAnswerKind::kNoData;
      if (kind != want) Fail("decision is not the documented one", name);
    }
  }

  // The same query bytes, parsed by ldns here, for the reply's checks.
  ldns_pkt* raw = nullptr;
  if (ldns_wire2pkt(&raw, data, size) != LDNS_STATUS_OK) {
    if (raw != nullptr) ldns_pkt_free(raw);
    Fail("ldns reads the query once but not twice", name);
  }
  std::unique_ptr<ldns_pkt, PacketFree> packet(raw);
  const IpAddress capture = *IpAddress::Parse("127.100.0.7");
  for (DnsAnswerKind kind :
       {DnsAnswerKind::kAddress, DnsAnswerKind::kNoData, DnsAnswerKind::kNameError,
        DnsAnswerKind::kFormatError, DnsAnswerKind::kNotImplemented, DnsAnswerKind::kRefused,
        DnsAnswerKind::kServerFailure}) {
    CheckReply(raw, *query, kind, capture);
  }
  return 0;
}
