#include "runtime/netproxy/proxy_capture.h"

namespace corral::runtime::net {
namespace {

constexpr uint8_t kCaptureNet[2] = {127, 100};  // 127.100.0.0/16

}  // namespace

std::optional<IpAddress> CaptureTable::AddressFor(const std::string& name) {
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second.address;
  if (by_name_.size() >= kMaxCaptureNames || next_ > 0xFFFE) return std::nullopt;
  const uint32_t index = next_++;
  IpAddress address;
  address.family = 4;
  address.bytes[0] = kCaptureNet[0];
  address.bytes[1] = kCaptureNet[1];
  address.bytes[2] = static_cast<uint8_t>(index >> 8);
  address.bytes[3] = static_cast<uint8_t>(index & 0xFF);
  by_name_.emplace(name, Entry{address, false});
  by_address_.emplace(index, name);
  return address;
}

std::optional<std::string> CaptureTable::NameAt(const IpAddress& address) const {
  if (address.family != 4 || address.bytes[0] != kCaptureNet[0] ||
      address.bytes[1] != kCaptureNet[1]) {
    return std::nullopt;
  }
  auto it = by_address_.find(static_cast<uint32_t>(address.bytes[2]) << 8 | address.bytes[3]);
  if (it == by_address_.end()) return std::nullopt;
  return it->second;
}

bool CaptureTable::Listening(const std::string& name) const {
  auto it = by_name_.find(name);
  return it != by_name_.end() && it->second.listening;
}

void CaptureTable::SetListening(const std::string& name) {
  if (auto it = by_name_.find(name); it != by_name_.end()) it->second.listening = true;
}

}  // namespace corral::runtime::net
