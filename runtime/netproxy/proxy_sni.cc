#include "runtime/netproxy/proxy_sni.h"

#include <optional>
#include <vector>

#include "runtime/net/rules.h"

namespace corral::runtime::net {
namespace {

using Status = SniResult::Status;

constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kClientHello = 1;
constexpr uint16_t kServerNameExtension = 0;
constexpr uint8_t kHostNameType = 0;
// TLSPlaintext.length may not exceed 2^14; allow the 2^14 + 2048 of a compressed record.
constexpr size_t kMaxRecordPayload = 16384 + 2048;

// A cursor over bytes that refuses to read past their end.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> data) : data_(data) {}

  bool Empty() const { return pos_ == data_.size(); }
  bool U8(uint8_t* v) {
    if (data_.size() - pos_ < 1) return false;
    *v = data_[pos_++];
    return true;
  }
  bool U16(uint16_t* v) {
    if (data_.size() - pos_ < 2) return false;
    *v = static_cast<uint16_t>(data_[pos_] << 8 | data_[pos_ + 1]);
    pos_ += 2;
    return true;
  }
  bool Bytes(size_t n, std::span<const uint8_t>* out) {
    if (data_.size() - pos_ < n) return false;
    *out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool Skip(size_t n) {
    std::span<const uint8_t> ignored;
    return Bytes(n, &ignored);
  }
  // A vector with a length prefix of 1 or 2 bytes.
  bool Vector8(std::span<const uint8_t>* out) {
    uint8_t n = 0;
    return U8(&n) && Bytes(n, out);
  }
  bool Vector16(std::span<const uint8_t>* out) {
    uint16_t n = 0;
    return U16(&n) && Bytes(n, out);
  }

 private:
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
};

SniResult Malformed() { return {Status::kMalformed, {}}; }

// A DNS host name as RFC 6066 wants it ("without a trailing dot"), checked by the
// allow-list's own rule (IsDnsName, runtime/net/rules.h): labels of letters, digits, '-'
// and '_', each 1-63 bytes, 253 in all. A name with an empty label (".a.com", "a..com") is
// no host name: the proxy must not compare (or log) a name the server may read otherwise.
// One trailing dot is tolerated and dropped, as NormalizeHost does for the tunnel's name,
// so that "a.com." and a CONNECT to "a.com" agree; "a.com.." still has an empty label.
// Returned lower case; nullopt if not a name.
std::optional<std::string> HostName(std::span<const uint8_t> raw) {
  std::string name(raw.begin(), raw.end());
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (!IsDnsName(name)) return std::nullopt;
  return name;
}

// The server_name extension's body: a list of (type, name); the host_name entry.
SniResult ParseServerName(std::span<const uint8_t> body) {
  Reader ext(body);
  std::span<const uint8_t> list;
  if (!ext.Vector16(&list) || !ext.Empty() || list.empty()) return Malformed();
  Reader entries(list);
  std::optional<std::string> found;
  while (!entries.Empty()) {
    uint8_t type = 0;
    std::span<const uint8_t> value;
    if (!entries.U8(&type) || !entries.Vector16(&value)) return Malformed();
    if (type != kHostNameType) continue;
    // Two host names would let the proxy and the server read different ones.
    if (found) return Malformed();
    found = HostName(value);
    if (!found) return Malformed();
  }
  if (!found) return {Status::kNoSni, {}};
  return {Status::kFound, *found};
}

// The ClientHello body (after the 4-byte handshake header), RFC 8446 4.1.2.
SniResult ParseClientHello(std::span<const uint8_t> hello) {
  Reader r(hello);
  std::span<const uint8_t> session_id, ciphers, compression;
  if (!r.Skip(2 + 32) || !r.Vector8(&session_id) || session_id.size() > 32 ||
      !r.Vector16(&ciphers) || ciphers.size() % 2 != 0 || !r.Vector8(&compression)) {
    return Malformed();
  }
  if (r.Empty()) return {Status::kNoSni, {}};  // no extensions at all (old clients)
  std::span<const uint8_t> extensions;
  if (!r.Vector16(&extensions) || !r.Empty()) return Malformed();
  Reader ext(extensions);
  std::optional<SniResult> sni;
  while (!ext.Empty()) {
    uint16_t type = 0;
    std::span<const uint8_t> body;
    if (!ext.U16(&type) || !ext.Vector16(&body)) return Malformed();
    if (type != kServerNameExtension) continue;
    if (sni) return Malformed();  // an extension may appear once
    sni = ParseServerName(body);
    if (sni->status == Status::kMalformed) return *sni;
  }
  return sni ? *sni : SniResult{Status::kNoSni, {}};
}

}  // namespace

SniResult ExtractSni(std::span<const uint8_t> data) {
  if (data.empty()) return {Status::kNeedMore, {}};
  if (data[0] != kHandshakeRecord) return {Status::kNotTls, {}};
  if (data.size() > kMaxClientHelloBytes + 5) data = data.first(kMaxClientHelloBytes + 5);
  // The handshake message may be split over several records: join their payloads.
  std::vector<uint8_t> handshake;
  size_t pos = 0;
  while (data.size() - pos >= 5) {
    const uint8_t* h = &data[pos];
    const size_t length = static_cast<size_t>(h[3] << 8 | h[4]);
    if (h[0] != kHandshakeRecord || h[1] != 3 || length == 0 || length > kMaxRecordPayload) {
      return Malformed();
    }
    if (data.size() - pos - 5 < length) break;  // this record is not complete yet
    handshake.insert(handshake.end(), h + 5, h + 5 + length);
    pos += 5 + length;
    if (handshake.size() < 4) continue;
    if (handshake[0] != kClientHello) return Malformed();
    const size_t message =
        static_cast<size_t>(handshake[1] << 16 | handshake[2] << 8 | handshake[3]);
    if (message > kMaxClientHelloBytes) return Malformed();
    if (handshake.size() >= 4 + message) {
      return ParseClientHello(std::span<const uint8_t>(handshake).subspan(4, message));
    }
  }
  if (data.size() >= kMaxClientHelloBytes + 5) return Malformed();
  return {Status::kNeedMore, {}};
}

}  // namespace corral::runtime::net
