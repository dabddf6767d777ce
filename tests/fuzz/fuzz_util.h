// Helpers shared by the libFuzzer targets (one process per target, no threads): the input
// as a string, and a check that aborts, so that a broken invariant is reported as a crash
// with its input saved like any other.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace corral::fuzz {

inline std::string AsString(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Splits the input at the first NUL: a selector or short field before it, the body after.
inline std::pair<std::string, std::string> SplitAtNul(const std::string& input) {
  size_t nul = input.find('\0');
  if (nul == std::string::npos) return {"", input};
  return {input.substr(0, nul), input.substr(nul + 1)};
}

[[noreturn]] inline void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace corral::fuzz
