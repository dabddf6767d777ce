#include "runtime/netproxy/proxy_socks_wire.h"

#include <arpa/inet.h>

namespace corral::runtime::net {
namespace {

constexpr uint8_t kVersion = 5;
constexpr uint8_t kNoAuth = 0x00;
constexpr uint8_t kNoAcceptableMethod = 0xFF;
constexpr uint8_t kIpv4 = 1;
constexpr uint8_t kDomain = 3;
constexpr uint8_t kIpv6 = 4;

std::string AddressText(int family, const uint8_t* bytes) {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(family, bytes, text, sizeof(text));
  return text;
}

}  // namespace

SocksParse ParseSocksGreeting(std::span<const uint8_t> data, SocksGreeting* out) {
  if (data.size() < 2)
    return data.empty() || data[0] == kVersion ? SocksParse::kNeedMore : SocksParse::kBad;
  if (data[0] != kVersion || data[1] == 0) return SocksParse::kBad;
  const size_t methods = data[1];
  if (data.size() < 2 + methods) return SocksParse::kNeedMore;
  out->offers_no_auth = false;
  for (size_t i = 0; i < methods; ++i) {
    if (data[2 + i] == kNoAuth) out->offers_no_auth = true;
  }
  out->consumed = 2 + methods;
  return SocksParse::kOk;
}

SocksParse ParseSocksRequest(std::span<const uint8_t> data, SocksRequest* out) {
  if (data.size() < 4) return SocksParse::kNeedMore;
  if (data[0] != kVersion || data[2] != 0) return SocksParse::kBad;
  *out = SocksRequest{};
  out->command = data[1];
  out->address_type = data[3];
  size_t address_length = 0;
  switch (out->address_type) {
    case kIpv4:
      address_length = 4;
      break;
    case kIpv6:
      address_length = 16;
      break;
    case kDomain:
      if (data.size() < 5) return SocksParse::kNeedMore;
      if (data[4] == 0) return SocksParse::kBad;
      address_length = 1 + data[4];
      break;
    default:
      out->consumed = 4;
      return SocksParse::kOk;  // the caller answers "address type not supported"
  }
  const size_t total = 4 + address_length + 2;
  if (data.size() < total) return SocksParse::kNeedMore;
  const uint8_t* address = &data[4];
  if (out->address_type == kIpv4) out->host = AddressText(AF_INET, address);
  if (out->address_type == kIpv6) out->host = AddressText(AF_INET6, address);
  if (out->address_type == kDomain) out->host.assign(address + 1, address + address_length);
  out->port = static_cast<uint16_t>(data[4 + address_length] << 8 | data[5 + address_length]);
  out->consumed = total;
  return SocksParse::kOk;
}

std::vector<uint8_t> SocksMethodReply(bool accepted) {
  return {kVersion, accepted ? kNoAuth : kNoAcceptableMethod};
}

std::vector<uint8_t> SocksRequestReply(SocksReply code) {
  return {kVersion, static_cast<uint8_t>(code), 0, kIpv4, 0, 0, 0, 0, 0, 0};
}

}  // namespace corral::runtime::net
