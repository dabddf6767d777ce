// The JSON form of a JailSpec (runtime/spec/spec_json.h): a persistent sandbox's state
// file and the pool's run request. What SpecFromJson accepts must Validate without
// crashing and write back to JSON that reads to the same spec.
#include <cstdint>
#include <string>

#include "runtime/spec/config.h"
#include "runtime/spec/spec_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::runtime;
  auto spec = SpecFromJson(corral::fuzz::AsString(data, size));
  if (!spec) return 0;
  (void)Validate(*spec);
  std::string json = SpecToJson(*spec);
  auto back = SpecFromJson(json);
  if (!back) corral::fuzz::Fail("SpecFromJson(SpecToJson(spec)) failed", back.error().message());
  if (SpecToJson(*back) != json) corral::fuzz::Fail("spec JSON does not round-trip", json);
  return 0;
}
