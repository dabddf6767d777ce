// Fixed-buffer string building for the jail child, which must not allocate.
#pragma once

#include <cstddef>

namespace corral::jail {

// Appends NUL-terminated strings into a fixed buffer, truncating silently.
class ChildText {
 public:
  ChildText(char* buf, size_t size) : buf_(buf), size_(size) {
    if (size_ > 0) buf_[0] = '\0';
  }
  ChildText& Add(const char* s) {
    while (s != nullptr && *s != '\0' && len_ + 1 < size_) buf_[len_++] = *s++;
    if (size_ > 0) buf_[len_] = '\0';
    return *this;
  }
  ChildText& Add(long v) {
    char digits[24];
    int n = 0;
    bool neg = v < 0;
    unsigned long u = neg ? -static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (neg) digits[n++] = '-';
    char out[24];
    for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
    out[n] = '\0';
    return Add(out);
  }
  const char* c_str() const { return buf_; }
  size_t size() const { return len_; }

 private:
  char* buf_;
  size_t size_;
  size_t len_ = 0;
};

}  // namespace corral::jail
