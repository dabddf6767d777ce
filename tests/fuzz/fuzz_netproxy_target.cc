// Where a sandbox's HTTP proxy request wants to go (runtime/netproxy/proxy_target.h): a
// CONNECT authority ("host:port", "[v6]:port") or an absolute-form "http://" URI, then the
// host through NormalizeHost (runtime/net/rules.h), which the policy checks it by. The
// first byte picks the parser, the rest is the text. What is accepted must write back to
// text that parses to the same target, and a normalized host must be a DNS name or an IP
// literal, stable when normalized again.
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/net/rules.h"
#include "runtime/netproxy/proxy_target.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace corral::runtime::net;
using corral::fuzz::Fail;

std::string Describe(const HostPort& h) {
  return "host '" + h.host + "' port " + std::to_string(h.port);
}

// "host:port" as a client would write it: an IPv6 literal (the only host with ':') in
// brackets, and a host that begins with '[' too (it came from brackets).
std::string Format(const HostPort& h) {
  const bool bracket = h.host.find(':') != std::string::npos || h.host.front() == '[';
  return (bracket ? "[" + h.host + "]" : h.host) + ":" + std::to_string(h.port);
}

void CheckHost(const std::string& host) {
  const std::string normal = NormalizeHost(host);
  if (normal.empty()) return;  // the policy refuses it: "not a valid host name"
  if (NormalizeHost(normal) != normal) Fail("NormalizeHost is not stable", host + " -> " + normal);
  if (!IsDnsName(normal) && !IpAddress::Parse(normal))
    Fail("normalized host is neither name nor address", normal);
  for (char c : normal) {
    if (c >= 'A' && c <= 'Z') Fail("normalized host is not lower case", normal);
  }
}

void CheckAuthority(const std::string& text, std::optional<uint16_t> default_port) {
  auto parsed = ParseAuthority(text, default_port);
  if (!parsed) return;
  const HostPort& h = *parsed;
  if (h.host.empty() || h.port == 0) Fail("accepted authority without host or port", Describe(h));
  if (text.find('@') != std::string::npos) Fail("accepted userinfo", text);
  if (h.host.find(':') != std::string::npos && text.front() != '[')
    Fail("IPv6 host without brackets", text);
  if (!default_port && text.find(':') == std::string::npos)
    Fail("accepted no port without a default", text);
  auto back = ParseAuthority(Format(h), std::nullopt);
  if (!back || back->host != h.host || back->port != h.port) {
    Fail("authority written back parses otherwise", text + " -> " + Format(h));
  }
  CheckHost(h.host);
}

void CheckForward(const std::string& text) {
  auto parsed = ParseForwardTarget(text);
  if (!parsed) return;
  const ForwardTarget& t = *parsed;
  if (t.origin_form.empty() || t.origin_form.front() != '/')
    Fail("origin-form does not start with '/'", t.origin_form);
  if (t.origin_form.find('#') != std::string::npos) Fail("fragment sent upstream", t.origin_form);
  if (t.authority.find_first_of("/?#") != std::string::npos)
    Fail("authority holds a path", t.authority);
  auto endpoint = ParseAuthority(t.authority, 80);
  if (!endpoint || endpoint->host != t.endpoint.host || endpoint->port != t.endpoint.port) {
    Fail("the Host sent upstream names another endpoint",
         t.authority + " vs " + Describe(t.endpoint));
  }
  auto back = ParseForwardTarget("http://" + t.authority + t.origin_form);
  if (!back || back->authority != t.authority || back->origin_form != t.origin_form ||
      back->endpoint.host != t.endpoint.host || back->endpoint.port != t.endpoint.port) {
    Fail("forward target written back parses otherwise", text);
  }
  CheckHost(t.endpoint.host);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text = corral::fuzz::AsString(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      CheckAuthority(text, std::nullopt);
      break;  // CONNECT
    case 1:
      CheckAuthority(text, 443);
      break;
    default:
      CheckForward(text);
  }
  return 0;
}
