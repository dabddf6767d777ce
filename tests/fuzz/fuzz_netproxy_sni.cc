// The TLS ClientHello's server name (runtime/netproxy/proxy_sni.h): the first bytes a
// sandbox sends through a CONNECT, SOCKS5 or captured tunnel, read to compare the name it
// asks the server for with the one the tunnel was allowed for. A found name must be a host
// name by the header's own rule, and the proxy's decision must not depend on how the
// bytes arrive: a prefix of the input is undecided or decided the same way, bytes after a
// decision change nothing, and a hello written anew for the found name finds it again.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/net/rules.h"
#include "runtime/netproxy/proxy_sni.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using corral::runtime::net::ExtractSni;
using corral::runtime::net::SniResult;
using Status = SniResult::Status;
using Bytes = std::vector<uint8_t>;

std::string Describe(const SniResult& r) {
  return "status " + std::to_string(static_cast<int>(r.status)) + " name '" + r.name + "'";
}

void Put16(Bytes& b, size_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

// A minimal TLS 1.2-style ClientHello in one record, asking for `name`.
Bytes HelloFor(const std::string& name) {
  Bytes body = {0x03, 0x03};
  body.insert(body.end(), 32, 0x11);  // random
  body.push_back(0);                  // no session id
  Put16(body, 2);
  body.insert(body.end(), {0x13, 0x01});
  body.insert(body.end(), {1, 0});  // compression: null
  Bytes list = {0};
  Put16(list, name.size());
  list.insert(list.end(), name.begin(), name.end());
  Bytes extension = {0, 0};
  Put16(extension, list.size() + 2);
  Put16(extension, list.size());
  extension.insert(extension.end(), list.begin(), list.end());
  Put16(body, extension.size());
  body.insert(body.end(), extension.begin(), extension.end());
  Bytes record = {0x16, 0x03, 0x01};
  Put16(record, body.size() + 4);
  record.insert(record.end(),
                {1, static_cast<uint8_t>(body.size() >> 16), static_cast<uint8_t>(body.size() >> 8),
                 static_cast<uint8_t>(body.size())});
  record.insert(record.end(), body.begin(), body.end());
  return record;
}

bool Same(const SniResult& a, const SniResult& b) {
  return a.status == b.status && a.name == b.name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  const SniResult r = ExtractSni(input);
  const std::string seen = Describe(r);
  if (r.status == Status::kFound) {
    // proxy_sni.h: lower case, no trailing dot, a DNS name by IsDnsName (so no empty label).
    if (!corral::runtime::net::IsDnsName(r.name))
      corral::fuzz::Fail("found SNI is not a DNS name", seen);
    for (char c : r.name) {
      if (c >= 'A' && c <= 'Z') corral::fuzz::Fail("found SNI is not lower case", seen);
    }
    const SniResult again = ExtractSni(HelloFor(r.name));
    if (!Same(again, r))
      corral::fuzz::Fail("a hello written for the found name reads back otherwise",
                         Describe(again));
  } else if (!r.name.empty()) {
    corral::fuzz::Fail("a name without kFound", seen);
  }
  if (r.status == Status::kNotTls && (size == 0 || data[0] == 0x16)) {
    corral::fuzz::Fail("kNotTls for a handshake record", seen);
  }

  // The proxy asks again as bytes arrive: every prefix is undecided or decided alike.
  for (size_t cut : {size / 2, size == 0 ? size_t{0} : size - 1}) {
    const SniResult prefix = ExtractSni(input.first(cut));
    if (prefix.status != Status::kNeedMore && !Same(prefix, r)) {
      corral::fuzz::Fail(
          "a prefix decides otherwise than the whole input",
          "prefix of " + std::to_string(cut) + ": " + Describe(prefix) + "; whole: " + seen);
    }
  }
  // Once decided, what the client sends next (its next records) does not matter.
  if (r.status != Status::kNeedMore) {
    Bytes more(input.begin(), input.end());
    more.insert(more.end(), {0x16, 0x03, 0x01, 0x00, 0x01, 0x01, 0x14, 0x03, 0x03});
    const SniResult longer = ExtractSni(more);
    if (!Same(longer, r))
      corral::fuzz::Fail("bytes after a decision change it", Describe(longer) + " vs " + seen);
  }
  return 0;
}
