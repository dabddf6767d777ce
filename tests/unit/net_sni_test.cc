#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/netproxy/proxy_sni.h"

namespace corral::runtime::net {
namespace {

using Bytes = std::vector<uint8_t>;
using Status = SniResult::Status;

void Put16(Bytes& b, size_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void Put24(Bytes& b, size_t v) {
  b.push_back(static_cast<uint8_t>(v >> 16));
  Put16(b, v & 0xFFFF);
}
void Append(Bytes& b, const Bytes& more) { b.insert(b.end(), more.begin(), more.end()); }

Bytes Extension(uint16_t type, const Bytes& body) {
  Bytes e;
  Put16(e, type);
  Put16(e, body.size());
  Append(e, body);
  return e;
}

// server_name with the given (type, name) entries.
Bytes ServerName(const std::vector<std::pair<uint8_t, std::string>>& entries) {
  Bytes list;
  for (const auto& [type, name] : entries) {
    list.push_back(type);
    Put16(list, name.size());
    list.insert(list.end(), name.begin(), name.end());
  }
  Bytes body;
  Put16(body, list.size());
  Append(body, list);
  return Extension(0, body);
}

// A ClientHello handshake message (type, length, body) with these extensions; without
// `with_extensions` the extensions block is left out entirely.
Bytes Handshake(const std::vector<Bytes>& extensions, bool with_extensions = true,
                uint8_t type = 1) {
  Bytes body = {0x03, 0x03};
  body.insert(body.end(), 32, 0xAB);  // random
  body.push_back(32);                 // session id
  body.insert(body.end(), 32, 0xCD);
  Put16(body, 4);  // two cipher suites
  Append(body, {0x13, 0x01, 0x13, 0x02});
  Append(body, {1, 0});  // compression: null
  if (with_extensions) {
    Bytes all;
    for (const Bytes& e : extensions) Append(all, e);
    Put16(body, all.size());
    Append(body, all);
  }
  Bytes message = {type};
  Put24(message, body.size());
  Append(message, body);
  return message;
}

// `handshake` in TLS records of at most `fragment` bytes each.
Bytes Records(const Bytes& handshake, size_t fragment = 16384) {
  Bytes out;
  for (size_t pos = 0; pos < handshake.size(); pos += fragment) {
    const size_t n = std::min(fragment, handshake.size() - pos);
    Append(out, {0x16, 0x03, 0x01});
    Put16(out, n);
    out.insert(out.end(), handshake.begin() + static_cast<ptrdiff_t>(pos),
               handshake.begin() + static_cast<ptrdiff_t>(pos + n));
  }
  return out;
}

Bytes Hello(const std::string& name) {
  return Records(Handshake(
      {Extension(0x000a, {0, 2, 0, 0x1d}), ServerName({{0, name}}), Extension(0x002b, {2, 3, 4})}));
}

SniResult Extract(const Bytes& b) { return ExtractSni(b); }

TEST(NetSni, FindsTheHostNameLowerCaseWithoutTrailingDot) {
  SniResult r = Extract(Hello("Pypi.ORG."));
  EXPECT_EQ(r.status, Status::kFound);
  EXPECT_EQ(r.name, "pypi.org");
  EXPECT_EQ(Extract(Hello("files.pythonhosted.org")).name, "files.pythonhosted.org");
}

TEST(NetSni, EveryTruncationOfAHelloNeedsMore) {
  const Bytes hello = Hello("example.com");
  for (size_t n = 0; n < hello.size(); ++n) {
    Bytes prefix(hello.begin(), hello.begin() + static_cast<ptrdiff_t>(n));
    ASSERT_EQ(Extract(prefix).status, Status::kNeedMore) << "prefix of " << n << " bytes";
  }
  EXPECT_EQ(Extract(hello).status, Status::kFound);
}

TEST(NetSni, JoinsAHelloSplitOverRecords) {
  const Bytes handshake = Handshake({ServerName({{0, "split.example.com"}})});
  for (size_t fragment : {1u, 7u, 50u, 100u}) {
    SniResult r = Extract(Records(handshake, fragment));
    EXPECT_EQ(r.status, Status::kFound) << "fragment " << fragment;
    EXPECT_EQ(r.name, "split.example.com");
  }
}

TEST(NetSni, BytesAfterTheHelloDoNotMatter) {
  Bytes data = Hello("example.com");
  Append(data, {0x14, 0x03, 0x03, 0x00, 0x01, 0x01});  // change_cipher_spec
  EXPECT_EQ(Extract(data).status, Status::kFound);
}

TEST(NetSni, OtherProtocolsAreNotTls) {
  const std::string http = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";
  EXPECT_EQ(Extract(Bytes(http.begin(), http.end())).status, Status::kNotTls);
  const std::string ssh = "SSH-2.0-OpenSSH_9.2\r\n";
  EXPECT_EQ(Extract(Bytes(ssh.begin(), ssh.end())).status, Status::kNotTls);
  EXPECT_EQ(Extract({0x80, 0x2e, 0x01}).status, Status::kNotTls);  // SSLv2-style hello
}

TEST(NetSni, AHelloWithoutServerNameHasNoSni) {
  EXPECT_EQ(Extract(Records(Handshake({}, false))).status, Status::kNoSni);
  EXPECT_EQ(Extract(Records(Handshake({}))).status, Status::kNoSni);
  EXPECT_EQ(Extract(Records(Handshake({Extension(0x000a, {0, 2, 0, 0x1d})}))).status,
            Status::kNoSni);
  // A server_name list with only a non-host_name entry.
  EXPECT_EQ(Extract(Records(Handshake({ServerName({{7, "x"}})}))).status, Status::kNoSni);
}

TEST(NetSni, MalformedHellosAreRefused) {
  EXPECT_EQ(Extract(Records(Handshake({ServerName({{0, "a.com"}})}, true, 2))).status,
            Status::kMalformed)
      << "ServerHello";
  EXPECT_EQ(
      Extract(Records(Handshake({ServerName({{0, "a.com"}}), ServerName({{0, "b.com"}})}))).status,
      Status::kMalformed)
      << "two server_name extensions";
  EXPECT_EQ(Extract(Records(Handshake({ServerName({{0, "a.com"}, {0, "b.com"}})}))).status,
            Status::kMalformed)
      << "two host names";
  EXPECT_EQ(Extract(Records(Handshake({ServerName({{0, "a b.com"}})}))).status, Status::kMalformed);
  EXPECT_EQ(Extract(Records(Handshake({ServerName({{0, std::string("a\0b", 3)}})}))).status,
            Status::kMalformed);
  EXPECT_EQ(Extract(Records(Handshake({ServerName({{0, ""}})}))).status, Status::kMalformed);
  EXPECT_EQ(Extract(Records(Handshake({ServerName({{0, std::string(300, 'a')}})}))).status,
            Status::kMalformed);
  EXPECT_EQ(Extract(Records(Handshake({Extension(0, {})}))).status, Status::kMalformed)
      << "empty server_name";
  EXPECT_EQ(Extract({0x16, 0x02, 0x00, 0x00, 0x05}).status, Status::kMalformed) << "record version";
  EXPECT_EQ(Extract({0x16, 0x03, 0x01, 0x00, 0x00}).status, Status::kMalformed) << "empty record";
  EXPECT_EQ(Extract({0x16, 0x03, 0x01, 0xFF, 0xFF}).status, Status::kMalformed)
      << "record too long";
  EXPECT_EQ(Extract({0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0xFF, 0xFF, 0xFF}).status,
            Status::kMalformed)
      << "message too long";
  // The extensions block claims more than the message holds.
  Bytes handshake = Handshake({ServerName({{0, "a.com"}})});
  handshake[handshake.size() - ServerName({{0, "a.com"}}).size() - 1] += 1;
  EXPECT_EQ(Extract(Records(handshake)).status, Status::kMalformed);
  // A handshake record followed by an alert before the message is complete.
  Bytes mixed = Records(Bytes(handshake.begin(), handshake.begin() + 10));
  Append(mixed, {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28});
  EXPECT_EQ(Extract(mixed).status, Status::kMalformed);
}

// RFC 6066: a HostName is a DNS host name. A name with an empty label was once accepted
// (".clit.example.com" as is, "a.com.." as "a.com."), so the proxy compared a name that
// no resolver would look up; the same goes for labels the allow-list refuses.
TEST(NetSni, ANameWithAnEmptyLabelIsMalformed) {
  const std::vector<std::string> names = {
      ".clit.example.com",          "a..com", "a.com..", ".", "..", "-a.com", "a-.com",
      std::string(64, 'a') + ".com"};
  for (const std::string& name : names) {
    SniResult r = Extract(Hello(name));
    EXPECT_EQ(r.status, Status::kMalformed) << "'" << name << "' gave '" << r.name << "'";
  }
  // One trailing dot is dropped (the tunnel's name is compared without it).
  EXPECT_EQ(Extract(Hello("clit.example.com.")).name, "clit.example.com");
  EXPECT_EQ(Extract(Hello(std::string(63, 'a') + ".com")).status, Status::kFound);
}

TEST(NetSni, AClientHelloThatNeverEndsIsMalformedOnceTooLong) {
  Bytes handshake = {1};
  Put24(handshake, kMaxClientHelloBytes);  // at the limit: keeps needing more
  Bytes data = Records(handshake);
  EXPECT_EQ(Extract(data).status, Status::kNeedMore);
  while (data.size() < kMaxClientHelloBytes + 64) Append(data, Records(Bytes(1000, 0)));
  EXPECT_EQ(Extract(data).status, Status::kMalformed);
}

// Fuzz-style: random bytes, and valid hellos with random bytes changed, never make the
// extractor read out of bounds (ASan) or crash; a found name is always a plausible one.
TEST(NetSni, SurvivesGarbageAndMutations) {
  std::mt19937 random(20240531);
  const Bytes hello = Hello("mutate.example.com");
  for (int i = 0; i < 20000; ++i) {
    Bytes data;
    if (i % 2 == 0) {
      data.resize(random() % 600);
      for (uint8_t& b : data) b = static_cast<uint8_t>(random());
      if (!data.empty() && i % 4 == 0) data[0] = 0x16;
      if (data.size() > 1 && i % 8 == 0) data[1] = 0x03;
    } else {
      data = hello;
      for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips) {
        data[random() % data.size()] = static_cast<uint8_t>(random());
      }
      data.resize(random() % (data.size() + 1));
    }
    SniResult r = Extract(data);
    if (r.status == Status::kFound) {
      ASSERT_FALSE(r.name.empty());
      ASSERT_LE(r.name.size(), 253u);
      for (char c : r.name)
        ASSERT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
                    c == '_');
    }
  }
}

}  // namespace
}  // namespace corral::runtime::net
