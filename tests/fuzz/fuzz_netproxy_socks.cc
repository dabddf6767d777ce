// SOCKS5 messages as the proxy reads them from a sandbox (runtime/netproxy/proxy_socks_wire.h):
// the greeting, then the request in the bytes after it, as one session does. A parsed
// message must lie within the input and say what its bytes say; a request written back
// from its fields parses to the same fields; every shorter prefix of a message needs more
// bytes (the session waits instead of acting on half a request), and bytes after it change
// nothing.
#include <arpa/inet.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/net/rules.h"
#include "runtime/netproxy/proxy_socks_wire.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace corral::runtime::net;
using corral::fuzz::Fail;
using Bytes = std::vector<uint8_t>;

std::string Describe(const SocksRequest& r) {
  return "command " + std::to_string(r.command) + " type " + std::to_string(r.address_type) +
         " host '" + r.host + "' port " + std::to_string(r.port) + " consumed " +
         std::to_string(r.consumed);
}

bool Same(const SocksRequest& a, const SocksRequest& b) {
  return a.command == b.command && a.address_type == b.address_type && a.host == b.host &&
         a.port == b.port && a.consumed == b.consumed;
}

// The request's wire form from its fields (RFC 1928 section 4); empty if they cannot be
// written (the fuzzer's own check: a parsed IP host must be an address of its type).
Bytes Encode(const SocksRequest& r) {
  Bytes out = {5, r.command, 0, r.address_type};
  if (r.address_type == 1 || r.address_type == 4) {
    uint8_t address[16] = {};
    if (::inet_pton(r.address_type == 1 ? AF_INET : AF_INET6, r.host.c_str(), address) != 1)
      return {};
    out.insert(out.end(), address, address + (r.address_type == 1 ? 4 : 16));
  } else if (r.address_type == 3) {
    out.push_back(static_cast<uint8_t>(r.host.size()));
    out.insert(out.end(), r.host.begin(), r.host.end());
  } else {
    return out;  // unknown type: the 4 bytes the caller answers 0x08 to
  }
  out.push_back(static_cast<uint8_t>(r.port >> 8));
  out.push_back(static_cast<uint8_t>(r.port));
  return out;
}

void CheckGreeting(std::span<const uint8_t> data, const SocksGreeting& g) {
  if (g.consumed < 3 || g.consumed > data.size() || g.consumed != 2u + data[1] || data[0] != 5) {
    Fail("greeting: consumed is not 2 + its method count within the input",
         std::to_string(g.consumed));
  }
  bool no_auth = false;
  for (size_t i = 2; i < g.consumed; ++i) no_auth = no_auth || data[i] == 0;
  if (no_auth != g.offers_no_auth) Fail("greeting: offers_no_auth disagrees with the methods", "");
  for (size_t n = 0; n < g.consumed; ++n) {
    SocksGreeting part;
    if (ParseSocksGreeting(data.first(n), &part) != SocksParse::kNeedMore) {
      Fail("greeting: a prefix of a greeting does not need more", std::to_string(n));
    }
  }
}

void CheckRequest(std::span<const uint8_t> data, const SocksRequest& r) {
  if (r.consumed < 4 || r.consumed > data.size())
    Fail("request: consumed out of bounds", Describe(r));
  if (r.command != data[1] || r.address_type != data[3])
    Fail("request: command or type not as sent", Describe(r));
  switch (r.address_type) {
    case 1:
    case 4: {
      auto ip = IpAddress::Parse(r.host);
      if (!ip || ip->family != (r.address_type == 1 ? 4 : 6)) {
        // An IPv4-mapped IPv6 address is classified as IPv4 (policy.h): allowed.
        if (!(ip && r.address_type == 4))
          Fail("request: the host is not an address of its type", Describe(r));
      }
      break;
    }
    case 3:
      if (r.host.empty() || r.host.size() != data[4] || r.consumed != 7u + r.host.size()) {
        Fail("request: domain length not as sent", Describe(r));
      }
      break;
    default:
      if (r.consumed != 4 || !r.host.empty())
        Fail("request: unknown type must consume 4 bytes, no host", Describe(r));
  }
  if (r.address_type == 1 || r.address_type == 3 || r.address_type == 4) {
    const uint16_t port = static_cast<uint16_t>(data[r.consumed - 2] << 8 | data[r.consumed - 1]);
    if (port != r.port) Fail("request: port not the last two bytes", Describe(r));
  }
  const Bytes wire = Encode(r);
  if (wire.empty()) Fail("request: its fields cannot be written back", Describe(r));
  SocksRequest back;
  if (ParseSocksRequest(wire, &back) != SocksParse::kOk || !Same(back, r)) {
    Fail("request: written back, it parses otherwise", Describe(r) + " vs " + Describe(back));
  }
  for (size_t n = 0; n < r.consumed; ++n) {
    SocksRequest part;
    if (ParseSocksRequest(data.first(n), &part) != SocksParse::kNeedMore) {
      Fail("request: a prefix of a request does not need more",
           std::to_string(n) + " of " + Describe(r));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  SocksGreeting greeting;
  const SocksParse g = ParseSocksGreeting(input, &greeting);
  std::span<const uint8_t> rest = input;
  if (g == SocksParse::kOk) {
    CheckGreeting(input, greeting);
    rest = input.subspan(greeting.consumed);
  } else if (g == SocksParse::kBad && (size >= 2 && data[0] == 5 && data[1] != 0)) {
    Fail("greeting: a version-5 greeting with methods refused", "");
  }
  // The request parser is fed the rest of a session, or the whole input when the
  // greeting did not parse (so that the seeds of either message reach it).
  SocksRequest request;
  const SocksParse q = ParseSocksRequest(rest, &request);
  if (q == SocksParse::kOk) {
    CheckRequest(rest, request);
    Bytes more(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(request.consumed));
    more.insert(more.end(), {5, 1, 0, 1, 0xFF});
    SocksRequest again;
    if (ParseSocksRequest(more, &again) != SocksParse::kOk || !Same(again, request)) {
      Fail("request: bytes after it change it", Describe(request) + " vs " + Describe(again));
    }
  }
  const Bytes reply = SocksRequestReply(static_cast<SocksReply>(size % 9));
  if (reply.size() != 10 || reply[0] != 5 || reply[3] != 1)
    Fail("reply: not a 10-byte IPv4 reply", "");
  return 0;
}
