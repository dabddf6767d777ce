// The in-jail resolver's messages: a DNS query parsed with ldns, what to answer it, and
// the answer as bytes. Pure (no sockets); runtime/netproxy/dns_server.h serves it on the jail's
// 127.0.0.1:53. The resolver never forwards anything: an allowed name gets a "capture
// address" of corral's (127.100.x.y), where corral's capture listeners wait for the plain
// TCP client; every other name does not exist.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/net/rules.h"

struct ldns_struct_pkt;

namespace corral::runtime::net {

inline constexpr uint16_t kDnsTypeA = 1;
inline constexpr uint16_t kDnsTypeAaaa = 28;
inline constexpr uint32_t kCaptureTtlSeconds = 60;

// What a query gets.
enum class DnsAnswerKind {
  kAddress,         // A of an allowed name: its capture address
  kNoData,          // an allowed name, another type (AAAA: clients fall back to IPv4)
  kNameError,       // NXDOMAIN: a name that is not allowed
  kFormatError,     // FORMERR: not exactly one question
  kNotImplemented,  // NOTIMP: an opcode other than QUERY
  kRefused,         // REFUSED: a class other than IN
  kServerFailure,   // SERVFAIL: no capture address could be given (see dns_server.cc)
};

class DnsQuery {
 public:
  // nullopt for bytes that are not a DNS message, or a response (QR set): dropped
  // without an answer, as a resolver does with garbage.
  static std::optional<DnsQuery> Parse(std::span<const uint8_t> wire);

  DnsQuery(DnsQuery&&) noexcept;
  DnsQuery& operator=(DnsQuery&&) noexcept;
  ~DnsQuery();

  // The question's name (lower case, no trailing dot; "" for the root), type and class;
  // meaningful when Problem() is nullopt.
  const std::string& name() const { return name_; }
  uint16_t type() const { return type_; }

  // kFormatError / kNotImplemented / kRefused when the query cannot be answered by name.
  std::optional<DnsAnswerKind> Problem() const;

  // The answer: same id and question, QR/AA/RA set, RD copied. `address` (IPv4) is used
  // for kAddress only. Empty on an ldns failure (the caller drops the query).
  std::vector<uint8_t> Reply(DnsAnswerKind kind, const std::optional<IpAddress>& address) const;

 private:
  DnsQuery() = default;
  struct PacketFree {
    void operator()(ldns_struct_pkt* p) const;
  };
  std::unique_ptr<ldns_struct_pkt, PacketFree> packet_;
  std::string name_;
  uint16_t type_ = 0;
  uint16_t class_ = 0;
};

// The answer for a well-formed query about `name_allowed` (Policy::NameAllowed).
DnsAnswerKind DecideDnsAnswer(const DnsQuery& query, bool name_allowed);

}  // namespace corral::runtime::net
