// What corral-netproxy has done so far, for the summary file (--summary) that corral reads
// after (and during) a run:
//   {"mode":"allowlist","connections":12,"allowed":10,"denied_count":5,
//    "denied":[{"host":"evil.com","port":0,"reason":"not on the allow-list","via":"dns"}],
//    "bytes_out":1234,"bytes_in":567890}
// connections: connection attempts decided (allowed + refused, DNS not included);
// allowed: of them, connected; denied_count: every refusal, DNS included; denied: the first
// kMaxDeniedListed distinct refusals (a repeated host/port/via/reason is listed once).
// Counted on the proxy's I/O thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/netproxy/proxy_log.h"

namespace corral::runtime::net {

inline constexpr size_t kMaxDeniedListed = 50;

class ProxyStats {
 public:
  void Count(const Decision& decision);
  // A connection that was counted as allowed was refused afterwards (SNI mismatch): it
  // stays among `allowed` (it did connect) and is added to the refusals.
  void CountLateDenial(const Decision& decision);
  void AddBytes(uint64_t out, uint64_t in);

  uint64_t total_bytes() const { return bytes_out_ + bytes_in_; }
  bool dirty() const { return dirty_; }

  nlohmann::json ToJson() const;
  // Writes the summary to `path` atomically (a temporary file beside it, then rename) and
  // clears dirty().
  Status WriteTo(const std::string& path);

 private:
  void AddDenied(const Decision& decision);

  uint64_t connections_ = 0;
  uint64_t allowed_ = 0;
  uint64_t denied_count_ = 0;
  std::vector<Decision> denied_;
  uint64_t bytes_out_ = 0;
  uint64_t bytes_in_ = 0;
  bool dirty_ = true;
};

}  // namespace corral::runtime::net
