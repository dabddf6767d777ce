// Capture addresses: the in-jail resolver answers an allowed name with an address of the
// jail's loopback, 127.100.x.y, one per name, stable for the proxy's life; corral listens
// there (runtime/netproxy/proxy_tcp.h), so a client that ignores proxy settings and simply
// connects to what the name resolved to still reaches the proxy, which then knows the
// name it meant. Pure bookkeeping; I/O thread only.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "runtime/net/policy.h"

namespace corral::runtime::net {

// Names given an address at most; then the resolver answers SERVFAIL for new names.
// Each name holds a listening socket per capture port, so this bounds the proxy's fds.
inline constexpr size_t kMaxCaptureNames = 1024;

class CaptureTable {
 public:
  // The name's address, assigned on first use (127.100.0.1, 127.100.0.2, ...); nullopt
  // when kMaxCaptureNames names have one. `name` is normalized (NormalizeHost).
  std::optional<IpAddress> AddressFor(const std::string& name);
  // The name an address was given to, if it is a capture address.
  std::optional<std::string> NameAt(const IpAddress& address) const;

  // Whether the name's listeners are up (they are created on the first A query).
  bool Listening(const std::string& name) const;
  void SetListening(const std::string& name);

 private:
  struct Entry {
    IpAddress address;
    bool listening = false;
  };
  std::map<std::string, Entry> by_name_;
  std::map<uint32_t, std::string> by_address_;  // the low 16 bits: x * 256 + y
  uint32_t next_ = 1;
};

}  // namespace corral::runtime::net
