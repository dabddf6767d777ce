// Byte sizes as written in config files and flags (runtime/spec/sizes.h). What ParseSize
// accepts is non-negative, its decimal form parses to the same count, and FormatSize's
// text reads back to about the same count.
#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/spec/sizes.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::runtime;
  std::string text = corral::fuzz::AsString(data, size);
  auto bytes = ParseSize(text);
  if (!bytes) return 0;
  if (*bytes < 0) corral::fuzz::Fail("ParseSize accepted a negative size", text);
  auto again = ParseSize(std::to_string(*bytes));
  if (!again || *again != *bytes) corral::fuzz::Fail("decimal form does not parse back", text);
  // FormatSize rounds to two decimals of its unit, so what it prints reads back (when it
  // does: there is no "EiB" unit to parse) within half a percent.
  std::string human = FormatSize(*bytes);
  if (auto parsed = ParseSize(human)) {
    long double error = std::fabs(static_cast<long double>(*parsed) - *bytes);
    if (error > 0.005L * *bytes + 1) corral::fuzz::Fail("FormatSize is off", text + " -> " + human);
  }
  return 0;
}
