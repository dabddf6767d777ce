// The decisions log of corral-netproxy (--log): one JSON object per line, appended and
// written with one write(2) each, so that a reader (corral, a user's `tail -f`) never
// sees half a line and nothing is lost if the proxy is killed.
//
//   {"time":"2025-01-31T12:00:00.123Z","sandbox":"s","via":"http","host":"pypi.org",
//    "port":443,"decision":"allow","address":"151.101.0.223"}
//   {"time":...,"sandbox":"s","via":"dns","host":"evil.com","port":0,"decision":"deny",
//    "reason":"not on the allow-list"}
//   {"time":...,"sandbox":"s","event":"close","via":"connect","host":"pypi.org","port":443,
//    "address":"151.101.0.223","bytes_out":517,"bytes_in":4096,"duration_ms":81}
//
// via: http (forwarded request), connect (HTTP CONNECT), socks (SOCKS5), dns (the
// resolver; port 0), tcp (a plain client captured on a capture address). bytes_out: from
// the jail; bytes_in: to the jail. Owned by the proxy's ProxyContext; I/O thread only.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime::net {

struct Decision {
  std::string via;
  std::string host;
  uint16_t port = 0;
  bool allowed = false;
  std::string reason;   // deny: why
  std::string address;  // allow: the address connected to (or given, for dns)
};

struct ConnectionEnd {
  std::string via;
  std::string host;
  uint16_t port = 0;
  std::string address;
  uint64_t bytes_out = 0;
  uint64_t bytes_in = 0;
  int64_t duration_ms = 0;
  std::string reason;  // set when the proxy cut it: "idle timeout", "byte limit", "proxy exit"
};

// "2025-01-31T12:00:00.123Z" (UTC, milliseconds) for now.
std::string IsoTimeNow();

class DecisionLog {
 public:
  // Opens `path` for appending (created 0640); an empty path logs nothing.
  static Result<DecisionLog> Open(const std::string& path, std::string sandbox);

  void Record(const Decision& decision);
  void Record(const ConnectionEnd& end);

 private:
  DecisionLog(UniqueFd fd, std::string sandbox)
      : fd_(std::move(fd)), sandbox_(std::move(sandbox)) {}
  void WriteLine(const std::string& line);

  UniqueFd fd_;
  std::string sandbox_;
  bool warned_ = false;  // a failed write is reported to stderr once
};

}  // namespace corral::runtime::net
