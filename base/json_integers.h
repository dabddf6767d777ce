// GetInteger(): an integer field of a parsed JSON document, checked. nlohmann converts a
// floating-point number to an integer type with a plain cast — undefined behaviour when it
// is out of range (found by tests/fuzz: "gid": 6.5e96 in a sandbox spec) — and an integer
// to a narrower type by wrapping. Here only integers within the target's range are taken;
// anything else throws nlohmann::json::type_error naming the key, which the callers'
// existing catch turns into an error. Header-only; any process.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace corral {

template <typename T>
void GetInteger(const nlohmann::json& j, const char* key, T* out) {
  const nlohmann::json& v = j.at(key);
  bool fits = false;
  if (v.is_number_unsigned()) {
    fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  } else if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    const auto max = static_cast<uint64_t>(std::numeric_limits<T>::max());
    fits = x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           (x < 0 || static_cast<uint64_t>(x) <= max);
  }
  if (!fits) {
    throw nlohmann::json::type_error::create(
        302, std::string(key) + ": expected an integer that fits its field", nullptr);
  }
  *out =
      v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
}

}  // namespace corral
