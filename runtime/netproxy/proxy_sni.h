// The server name (SNI) a TLS client asks for, read from the first bytes it sends through a
// tunnel (CONNECT, SOCKS5, a captured connection). The proxy compares it with the name
// the tunnel was allowed for, so that a client cannot open a tunnel to an allowed name and
// then ask the same (shared, CDN) server for another one.
//
// Pure and bounded: looks at no more than kMaxClientHelloBytes of `data`, never reads
// outside it, allocates at most that much; any byte sequence is a valid input (fuzzed by
// tests/fuzz/fuzz_netproxy_sni.cc, and by tests/unit/net_sni_test.cc with truncated and
// random input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace corral::runtime::net {

// A ClientHello longer than this (the handshake message over all its records) is treated
// as malformed; real ones are a few hundred bytes to ~2 KiB (post-quantum key shares).
inline constexpr size_t kMaxClientHelloBytes = 32 * 1024;

struct SniResult {
  enum class Status {
    kNeedMore,   // a TLS handshake so far: read more bytes and ask again
    kNotTls,     // the first byte is not a TLS handshake record: some other protocol
    kNoSni,      // a complete ClientHello without a server_name host name
    kFound,      // `name` is the host name asked for: lower case, no trailing dot, valid
                 // per IsDnsName (runtime/net/rules.h). One trailing dot as sent is
                 // dropped; a name with an empty label (".a.com", "a..com", "a.com..") or
                 // a label over 63 bytes or starting/ending with '-' is kMalformed.
    kMalformed,  // starts like TLS but is not a well-formed ClientHello (or is too long)
  };
  Status status = Status::kNeedMore;
  std::string name;
};

// `data` is everything the client sent so far, from its first byte.
SniResult ExtractSni(std::span<const uint8_t> data);

}  // namespace corral::runtime::net
