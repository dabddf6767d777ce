// The YAML config file (runtime/spec/config.h): LoadConfigText, then Validate on what it
// accepted, then the spec's JSON state form (what a persistent sandbox stores) must read
// back to the same JSON. Seeds: config.example.yaml and small files in corpus/fuzz_config.
#include <cstdint>
#include <string>

#include "runtime/spec/config.h"
#include "runtime/spec/spec_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::runtime;
  JailSpec spec;
  if (!LoadConfigText(corral::fuzz::AsString(data, size), "fuzz.yaml", &spec)) return 0;
  (void)ValidateLateFields(spec);
  // Only a validated spec is ever stored (CreateSandbox validates first); what Validate
  // refuses, such as a NUL in a path, SpecFromJson refuses too.
  if (!Validate(spec).empty()) return 0;
  std::string json = SpecToJson(spec);
  auto back = SpecFromJson(json);
  if (!back) corral::fuzz::Fail("SpecFromJson(SpecToJson(spec)) failed", back.error().message());
  if (SpecToJson(*back) != json) corral::fuzz::Fail("spec JSON does not round-trip", json);
  return 0;
}
