#include "runtime/spec/sizes.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <limits>

namespace corral::runtime {
namespace {

constexpr int kMaxFractionDigits = 18;  // 10^18 still fits in int64_t

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Shift of the unit (bytes = 1 << shift), or -1 if `unit` is not one we accept.
int UnitShift(std::string_view unit) {
  std::string lower;
  for (char c : unit) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.empty() || lower == "b") return 0;
  static constexpr struct {
    char letter;
    int shift;
  } kUnits[] = {{'k', 10}, {'m', 20}, {'g', 30}, {'t', 40}, {'p', 50}};
  for (const auto& u : kUnits) {
    if (lower[0] != u.letter) continue;
    std::string_view rest = std::string_view(lower).substr(1);
    if (rest.empty() || rest == "b" || rest == "ib") return u.shift;
  }
  return -1;
}

Error Invalid(std::string_view text, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument, "size \"" + std::string(text) + "\" " + why);
}

Error ExpectedSize(std::string_view text) {
  return Error(ErrorCode::kInvalidArgument,
               "expected a size like 512m, got \"" + std::string(text) + "\"");
}

}  // namespace

Result<int64_t> ParseSize(std::string_view text) {
  std::string_view s = TrimSpaces(text);
  if (!s.empty() && s.front() == '-') return Invalid(text, "is negative");
  size_t i = 0;
  // Digits are accumulated in 128 bits and capped, so "99999999999999999999" reports
  // overflow instead of wrapping.
  constexpr __int128 kCap = static_cast<__int128>(std::numeric_limits<int64_t>::max()) + 1;
  __int128 whole = 0;
  size_t whole_digits = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++whole_digits) {
    whole = whole * 10 + (s[i] - '0');
    if (whole > kCap) whole = kCap;
  }
  if (whole_digits == 0) return ExpectedSize(text);
  __int128 fraction = 0;
  __int128 scale = 1;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t fraction_digits = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      if (++fraction_digits > kMaxFractionDigits) return Invalid(text, "has too many decimals");
      fraction = fraction * 10 + (s[i] - '0');
      scale *= 10;
    }
    if (fraction_digits == 0) return ExpectedSize(text);
  }
  while (i < s.size() && IsSpace(s[i])) ++i;
  int shift = UnitShift(s.substr(i));
  if (shift < 0) return ExpectedSize(text);

  const __int128 unit = static_cast<__int128>(1) << shift;
  if (whole * unit >= kCap) return Invalid(text, "is too large (the limit is 8 EiB)");
  // whole*unit < 2^63 and scale <= 10^18 < 2^60, so this stays below 2^127.
  __int128 scaled = (whole * scale + fraction) * unit;
  if (scaled % scale != 0) return Invalid(text, "is not a whole number of bytes");
  __int128 bytes = scaled / scale;
  if (bytes >= kCap) return Invalid(text, "is too large (the limit is 8 EiB)");
  return static_cast<int64_t>(bytes);
}

std::string FormatSize(int64_t bytes) {
  if (bytes < 0) {
    // Negate in unsigned space: -INT64_MIN does not fit in int64_t.
    uint64_t magnitude = 0 - static_cast<uint64_t>(bytes);
    if (magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return "-8 EiB";
    }
    return "-" + FormatSize(static_cast<int64_t>(magnitude));
  }
  static constexpr const char* kUnitNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int index = 0;
  while (index + 1 < 7 && bytes >= (static_cast<int64_t>(1) << (10 * (index + 1)))) ++index;
  const int64_t unit = static_cast<int64_t>(1) << (10 * index);
  char buf[64];
  if (bytes % unit == 0) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " %s", bytes / unit, kUnitNames[index]);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / static_cast<double>(unit));
  std::string number = buf;
  while (number.back() == '0') number.pop_back();
  if (number.back() == '.') number.pop_back();
  return number + " " + kUnitNames[index];
}

}  // namespace corral::runtime
