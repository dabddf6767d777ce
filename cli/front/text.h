// Text for the front program without libc: a growing byte buffer (mmap'ed), JSON string
// escaping, and reading one field out of the small JSON objects a pool server replies with.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace corral::front {

class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // False once an allocation failed; everything appended after that is dropped.
  bool ok() const { return ok_; }
  const char* data() const { return data_ != nullptr ? data_ : ""; }
  size_t size() const { return size_; }
  // NUL-terminated view (the terminator is not counted in size()).
  const char* c_str();

  void Append(const char* text, size_t n);
  void Append(const char* text);
  void AppendInt(long value);
  // `text` as a JSON string literal, quotes included.
  void AppendJsonString(const char* text);
  // Room for `n` more bytes at data() + size(); then Commit(how many were written).
  char* Reserve(size_t n);
  void Commit(size_t n) { size_ += n; }
  void Clear() { size_ = 0; }

 private:
  bool Grow(size_t need);
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool ok_ = true;
};

// In a compact JSON object such as {"kind":"cold","reason":"..."} (what nlohmann's
// dump() writes), the value of the top-level string field `key`, unescaped, into *out;
// false if there is none. Only what a pool server sends is understood: keys are looked for
// at the top level only; \uXXXX escapes below 0x80 are decoded, others kept as UTF-8.
bool JsonStringField(const char* json, size_t n, const char* key, Buffer* out);
// The value of the top-level integer field `key`.
bool JsonIntField(const char* json, size_t n, const char* key, long* out);

}  // namespace corral::front
