#include "cli/front/text.h"

#include <asm/unistd.h>
#include <sys/mman.h>

#include "cli/front/sys.h"

namespace corral::front {

namespace {

void CopyBytes(char* to, const char* from, size_t n) {
  for (size_t i = 0; i < n; ++i) to[i] = from[i];
}

// Where the value of top-level `key` starts (just past "key":), or nullptr. Walks the
// object token by token so that a key inside a nested value or a string is not taken.
const char* FindValue(const char* json, size_t n, const char* key) {
  const char* end = json + n;
  const char* p = json;
  int depth = 0;
  const size_t key_len = sys::StrLen(key);
  while (p < end) {
    char c = *p;
    if (c == '"') {
      const char* start = ++p;
      while (p < end && *p != '"') p += (*p == '\\') ? 2 : 1;
      if (p >= end) return nullptr;
      size_t len = static_cast<size_t>(p - start);
      ++p;  // the closing quote
      if (depth == 1 && p < end && *p == ':' && len == key_len) {
        bool same = true;
        for (size_t i = 0; i < len && same; ++i) same = start[i] == key[i];
        if (same) return p + 1;
      }
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    ++p;
  }
  return nullptr;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(Buffer* out, unsigned cp) {
  char b[4];
  size_t n;
  if (cp < 0x80) {
    b[0] = static_cast<char>(cp);
    n = 1;
  } else if (cp < 0x800) {
    b[0] = static_cast<char>(0xC0 | (cp >> 6));
    b[1] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 2;
  } else {
    b[0] = static_cast<char>(0xE0 | (cp >> 12));
    b[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    b[2] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 3;
  }
  out->Append(b, n);
}

}  // namespace

Buffer::~Buffer() {
  if (data_ != nullptr) sys::Syscall(__NR_munmap, reinterpret_cast<long>(data_), capacity_);
}

bool Buffer::Grow(size_t need) {
  if (!ok_) return false;
  if (size_ + need + 1 <= capacity_) return true;
  size_t capacity = capacity_ == 0 ? 16384 : capacity_;
  while (capacity < size_ + need + 1) capacity *= 2;
  long mem = sys::Syscall(__NR_mmap, 0, static_cast<long>(capacity), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem < 0 && mem > -4096) {
    ok_ = false;
    return false;
  }
  char* fresh = reinterpret_cast<char*>(mem);
  if (data_ != nullptr) {
    CopyBytes(fresh, data_, size_);
    sys::Syscall(__NR_munmap, reinterpret_cast<long>(data_), static_cast<long>(capacity_));
  }
  data_ = fresh;
  capacity_ = capacity;
  return true;
}

const char* Buffer::c_str() {
  if (!Grow(0)) return "";
  data_[size_] = '\0';
  return data_;
}

void Buffer::Append(const char* text, size_t n) {
  if (!Grow(n)) return;
  CopyBytes(data_ + size_, text, n);
  size_ += n;
}

void Buffer::Append(const char* text) { Append(text, sys::StrLen(text)); }

void Buffer::AppendInt(long value) {
  char digits[24];
  size_t n = 0;
  unsigned long v =
      value < 0 ? 0UL - static_cast<unsigned long>(value) : static_cast<unsigned long>(value);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (value < 0) Append("-", 1);
  while (n > 0) Append(&digits[--n], 1);
}

void Buffer::AppendJsonString(const char* text) {
  static const char kHex[] = "0123456789abcdef";
  Append("\"", 1);
  for (const char* p = text; *p != '\0'; ++p) {
    auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', static_cast<char>(c)};
      Append(esc, 2);
    } else if (c < 0x20) {
      char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      Append(esc, 6);
    } else {
      Append(p, 1);  // UTF-8 passes through; invalid bytes are the server's to refuse
    }
  }
  Append("\"", 1);
}

char* Buffer::Reserve(size_t n) { return Grow(n) ? data_ + size_ : nullptr; }

bool JsonStringField(const char* json, size_t n, const char* key, Buffer* out) {
  const char* p = FindValue(json, n, key);
  const char* end = json + n;
  if (p == nullptr || p >= end || *p != '"') return false;
  for (++p; p < end && *p != '"'; ++p) {
    if (*p != '\\') {
      out->Append(p, 1);
      continue;
    }
    if (++p >= end) return false;
    switch (*p) {
      case 'n':
        out->Append("\n", 1);
        break;
      case 't':
        out->Append("\t", 1);
        break;
      case 'r':
        out->Append("\r", 1);
        break;
      case 'b':
        out->Append("\b", 1);
        break;
      case 'f':
        out->Append("\f", 1);
        break;
      case 'u': {
        unsigned cp = 0;
        for (int i = 1; i <= 4; ++i) {
          int d = p + i < end ? HexDigit(p[i]) : -1;
          if (d < 0) return false;
          cp = cp * 16 + static_cast<unsigned>(d);
        }
        p += 4;
        AppendUtf8(out, cp);
        break;
      }
      default:
        out->Append(p, 1);
        break;  // \" \\ \/
    }
  }
  return p < end;
}

bool JsonIntField(const char* json, size_t n, const char* key, long* out) {
  const char* p = FindValue(json, n, key);
  const char* end = json + n;
  if (p == nullptr || p >= end) return false;
  bool negative = *p == '-';
  if (negative) ++p;
  if (p >= end || *p < '0' || *p > '9') return false;
  long v = 0;
  while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  *out = negative ? -v : v;
  return true;
}

}  // namespace corral::front
