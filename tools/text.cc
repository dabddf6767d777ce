#include "tools/text.h"

#include <algorithm>

namespace corral::tools {
namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Byte offset of code point `n` (s.size() if past the end).
size_t OffsetOf(const std::string& s, size_t n) {
  size_t i = 0;
  while (i < s.size() && n > 0) {
    ++i;
    while (i < s.size() && IsContinuation(static_cast<unsigned char>(s[i]))) ++i;
    --n;
  }
  return i;
}

std::string FirstChars(const std::string& s, size_t n) { return s.substr(0, OffsetOf(s, n)); }

std::string LastChars(const std::string& s, size_t n) {
  size_t total = CharCount(s);
  return n >= total ? s : s.substr(OffsetOf(s, total - n));
}

}  // namespace

size_t CharCount(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += IsContinuation(c) ? 0 : 1;
  return n;
}

std::string MiddleTruncate(const std::string& s, int max_chars) {
  if (max_chars <= 0) return s;
  const size_t total = CharCount(s);
  const size_t max = static_cast<size_t>(max_chars);
  if (total <= max) return s;
  // Sized for the worst case (every char skipped), so the result never exceeds max_chars.
  const size_t marker_max =
      std::string("\n... [middle truncated: " + std::to_string(total) + " chars skipped] ...\n")
          .size();
  if (max <= marker_max) return FirstChars(s, max);
  const size_t kept = max - marker_max;
  const size_t head = kept / 2;
  const size_t tail = kept - head;
  return FirstChars(s, head) + "\n... [middle truncated: " + std::to_string(total - kept) +
         " chars skipped] ...\n" + LastChars(s, tail);
}

std::string HeadTruncate(const std::string& s, int max_chars, const std::string& hint) {
  if (max_chars <= 0) return s;
  const size_t total = CharCount(s);
  const size_t max = static_cast<size_t>(max_chars);
  if (total <= max) return s;
  auto marker = [&](size_t kept) {
    return "\n\n... [truncated: showing first " + std::to_string(kept) + " of " +
           std::to_string(total) + " chars. " + hint + "] ...";
  };
  const size_t marker_max = marker(total).size();
  if (max <= marker_max) return FirstChars(s, max);
  const size_t kept = max - marker_max;
  return FirstChars(s, kept) + marker(kept);
}

}  // namespace corral::tools
