// FNV-1a, 64 bits: a short stable hash for names derived from ids (not for security; the
// inputs are validated ids, and a collision is checked for where it would matter).
#pragma once

#include <cstdint>
#include <string_view>

namespace corral {

inline constexpr uint64_t kFnv1aOffsetBasis = 14695981039346656037ULL;

inline uint64_t Fnv1a(std::string_view s, uint64_t seed = kFnv1aOffsetBasis) {
  uint64_t h = seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace corral
