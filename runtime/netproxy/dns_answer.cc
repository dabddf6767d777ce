#include "runtime/netproxy/dns_answer.h"

#include <ldns/ldns.h>

#include <cstdlib>

namespace corral::runtime::net {
namespace {

struct RrFree {
  void operator()(ldns_rr* rr) const { ldns_rr_free(rr); }
};
using RrPtr = std::unique_ptr<ldns_rr, RrFree>;

uint8_t Rcode(DnsAnswerKind kind) {
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
  return LDNS_RCODE_SERVFAIL;
}

// "Example.COM." -> "example.com"; the presentation form escapes odd bytes ("\000"), which
// then fail the policy's name check as they should.
std::string NameOf(const ldns_rdf* owner) {
  char* text = ldns_rdf2str(owner);
  if (text == nullptr) return "";
  std::string name(text);
  std::free(text);
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (!name.empty() && name.back() == '.') name.pop_back();
  return name;
}

// The A record `name` -> `address`, owned by the caller.
RrPtr AddressRecord(const ldns_rdf* owner, const IpAddress& address) {
  RrPtr rr(ldns_rr_new());
  if (!rr) return nullptr;
  ldns_rdf* name = ldns_rdf_clone(owner);
  ldns_rdf* data = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_A, 4, address.bytes.data());
  if (name == nullptr || data == nullptr) {
    if (name != nullptr) ldns_rdf_deep_free(name);
    if (data != nullptr) ldns_rdf_deep_free(data);
    return nullptr;
  }
  ldns_rr_set_owner(rr.get(), name);
  ldns_rr_set_type(rr.get(), LDNS_RR_TYPE_A);
  ldns_rr_set_class(rr.get(), LDNS_RR_CLASS_IN);
  ldns_rr_set_ttl(rr.get(), kCaptureTtlSeconds);
  if (!ldns_rr_push_rdf(rr.get(), data)) {
    ldns_rdf_deep_free(data);
    return nullptr;
  }
  return rr;
}

}  // namespace

void DnsQuery::PacketFree::operator()(ldns_struct_pkt* p) const { ldns_pkt_free(p); }

DnsQuery::DnsQuery(DnsQuery&&) noexcept = default;
DnsQuery& DnsQuery::operator=(DnsQuery&&) noexcept = default;
DnsQuery::~DnsQuery() = default;

std::optional<DnsQuery> DnsQuery::Parse(std::span<const uint8_t> wire) {
  ldns_pkt* raw = nullptr;
  if (ldns_wire2pkt(&raw, wire.data(), wire.size()) != LDNS_STATUS_OK) {
    if (raw != nullptr) ldns_pkt_free(raw);
    return std::nullopt;
  }
  DnsQuery query;
  query.packet_.reset(raw);
  if (ldns_pkt_qr(raw)) return std::nullopt;
  const ldns_rr_list* questions = ldns_pkt_question(raw);
  if (questions != nullptr && ldns_rr_list_rr_count(questions) == 1) {
    const ldns_rr* question = ldns_rr_list_rr(questions, 0);
    query.name_ = NameOf(ldns_rr_owner(question));
    query.type_ = static_cast<uint16_t>(ldns_rr_get_type(question));
    query.class_ = static_cast<uint16_t>(ldns_rr_get_class(question));
  }
  return query;
}

std::optional<DnsAnswerKind> DnsQuery::Problem() const {
  if (ldns_pkt_get_opcode(packet_.get()) != LDNS_PACKET_QUERY)
    return DnsAnswerKind::kNotImplemented;
  const ldns_rr_list* questions = ldns_pkt_question(packet_.get());
  if (questions == nullptr || ldns_rr_list_rr_count(questions) != 1)
    return DnsAnswerKind::kFormatError;
  if (class_ != LDNS_RR_CLASS_IN) return DnsAnswerKind::kRefused;
  return std::nullopt;
}

std::vector<uint8_t> DnsQuery::Reply(DnsAnswerKind kind,
                                     const std::optional<IpAddress>& address) const {
  std::unique_ptr<ldns_pkt, PacketFree> reply(ldns_pkt_new());
  if (!reply) return {};
  const ldns_pkt* query = packet_.get();
  ldns_pkt_set_id(reply.get(), ldns_pkt_id(query));
  ldns_pkt_set_qr(reply.get(), true);
  ldns_pkt_set_aa(reply.get(), true);
  ldns_pkt_set_ra(reply.get(), true);
  ldns_pkt_set_rd(reply.get(), ldns_pkt_rd(query));
  ldns_pkt_set_opcode(reply.get(), ldns_pkt_get_opcode(query));
  ldns_pkt_set_rcode(reply.get(), Rcode(kind));
  const ldns_rr_list* questions = ldns_pkt_question(query);
  // The question is echoed when there is exactly one (a FORMERR for several has none).
  if (questions != nullptr && ldns_rr_list_rr_count(questions) == 1) {
    const ldns_rr* question = ldns_rr_list_rr(questions, 0);
    RrPtr copy(ldns_rr_clone(question));
    if (!copy || !ldns_pkt_push_rr(reply.get(), LDNS_SECTION_QUESTION, copy.get())) return {};
    copy.release();  // the packet owns it now
    if (kind == DnsAnswerKind::kAddress && address && address->family == 4) {
      RrPtr a = AddressRecord(ldns_rr_owner(question), *address);
      if (!a || !ldns_pkt_push_rr(reply.get(), LDNS_SECTION_ANSWER, a.get())) return {};
      a.release();
    }
  }
  uint8_t* wire = nullptr;
  size_t size = 0;
  if (ldns_pkt2wire(&wire, reply.get(), &size) != LDNS_STATUS_OK || wire == nullptr) return {};
  std::vector<uint8_t> out(wire, wire + size);
  std::free(wire);
  return out;
}

DnsAnswerKind DecideDnsAnswer(const DnsQuery& query, bool name_allowed) {
  if (auto problem = query.Problem()) return *problem;
  if (!name_allowed) return DnsAnswerKind::kNameError;
  return query.type() == kDnsTypeA ? DnsAnswerKind::kAddress : DnsAnswerKind::kNoData;
}

}  // namespace corral::runtime::net
