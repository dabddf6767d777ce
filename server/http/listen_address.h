// Where `corral serve` listens, and which Host headers name it.
//
// `--listen` takes IP:PORT ("127.0.0.1:8002", "[::1]:8002"; "localhost:PORT" means
// 127.0.0.1) or unix:/ABSOLUTE/PATH. A Host header is accepted when it names the listen
// address: its HOST:PORT, or for a loopback listen any loopback spelling of the same port
// (localhost, 127.0.0.1, [::1]); for a unix socket "localhost" (what curl --unix-socket and
// most HTTP-over-unix clients send). `server.allowed_hosts` adds names (a gateway in a
// container that reaches the host as host.docker.internal:8002). Anything else is refused:
// a DNS-rebinding page in a browser reaches 127.0.0.1 with its own Host, and a foreign Host
// must never end up in a sandbox_url. Pure logic; unit-tested.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace corral::server {

struct ListenAddress {
  bool is_unix = false;
  std::string host;          // IP literal without brackets ("127.0.0.1", "::1"); TCP only
  uint16_t port = 0;         // TCP only; 0 = any free port (tests)
  std::string unix_path;     // unix only
  bool loopback = false;     // 127.0.0.0/8 or ::1 (always true for unix sockets)
  bool unspecified = false;  // 0.0.0.0 or ::

  // "127.0.0.1:8002", "[::1]:8002", "unix:/run/corral/api.sock".
  std::string ToString() const;
};

// kInvalidArgument naming the problem ("--listen 1.2.3:80: ...").
Result<ListenAddress> ParseListenAddress(const std::string& text);

// The Host header values (lower-case) that name this server. `bound_port` is the port
// actually bound (differs from address.port when that is 0).
class HostCheck {
 public:
  HostCheck(const ListenAddress& address, uint16_t bound_port,
            const std::vector<std::string>& allowed_hosts);
  // Whether `host_header` names this server (case-insensitive, no surrounding spaces).
  bool Accepts(std::string_view host_header) const;
  // What a refusal message says is expected ("127.0.0.1:8002").
  const std::string& expected() const { return expected_; }
  bool empty() const { return accepted_.empty(); }

 private:
  std::set<std::string> accepted_;
  std::string expected_;
};

std::string ToLower(std::string_view text);

}  // namespace corral::server
