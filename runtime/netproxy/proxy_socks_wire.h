// SOCKS5 (RFC 1928) messages as bytes: the client's greeting and request, parsed from
// what has arrived so far, and the proxy's replies. Pure; the session that reads and
// writes them is runtime/netproxy/proxy_socks.h. Only "no authentication" and CONNECT are
// offered; any byte sequence is a valid input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace corral::runtime::net {

// Reply codes (RFC 1928 section 6).
enum class SocksReply : uint8_t {
  kSucceeded = 0x00,
  kGeneralFailure = 0x01,
  kNotAllowed = 0x02,  // "connection not allowed by ruleset"
  kHostUnreachable = 0x04,
  kConnectionRefused = 0x05,
  kCommandNotSupported = 0x07,
  kAddressTypeNotSupported = 0x08,
};

enum class SocksParse {
  kNeedMore,  // read more bytes and parse again from the start
  kOk,        // `consumed` bytes form the message
  kBad,       // not SOCKS5, or a malformed message: close the connection
};

struct SocksGreeting {
  bool offers_no_auth = false;  // method 0x00 is in the client's list
  size_t consumed = 0;
};
SocksParse ParseSocksGreeting(std::span<const uint8_t> data, SocksGreeting* out);

struct SocksRequest {
  uint8_t command = 0;       // 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE
  uint8_t address_type = 0;  // 1 IPv4, 3 domain name, 4 IPv6
  std::string host;          // the domain name as sent, or the address as text
  uint16_t port = 0;
  size_t consumed = 0;
};
// kOk also for a command other than CONNECT (the caller answers 0x07) and for an unknown
// address type (the caller answers 0x08; then `host` is empty and `consumed` is 4).
SocksParse ParseSocksRequest(std::span<const uint8_t> data, SocksRequest* out);

// The method selection message: 0x00 (no authentication) or 0xFF (none acceptable).
std::vector<uint8_t> SocksMethodReply(bool accepted);
// A reply to the request; the bound address is reported as 0.0.0.0:0.
std::vector<uint8_t> SocksRequestReply(SocksReply code);

}  // namespace corral::runtime::net
