// OCI/Docker seccomp profiles (jail/seccomp_profile_parse.h, jail/seccomp.h): a profile
// named by `seccomp.profile` is outside input. What ParseSeccompProfile accepts is
// compiled with libseccomp, and the compiled filter must be one that jail/seccomp_eval.h
// can run for any call (the exec slots rely on reading it), answering one of seccomp's
// actions. Seeds: seccomp-profiles/*.json and small profiles in corpus/.
#include <linux/seccomp.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "jail/seccomp.h"
#include "jail/seccomp_eval.h"
#include "jail/seccomp_profile_parse.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// A few calls to run the compiled filter on: common syscalls, and one whose number and
// arguments come from the input, so that argument comparisons are reached too.
void RunFilter(const corral::jail::SeccompProgram& program, const std::string& input) {
  seccomp_data call{};
  call.arch = corral::jail::NativeAuditArch();
  uint64_t bytes[6] = {};
  std::memcpy(bytes, input.data(), std::min(input.size(), sizeof bytes));
  for (int nr : {0, 1, 2, 59, 60, 231, static_cast<int>(bytes[0] % 512)}) {
    call.nr = nr;
    for (int i = 0; i < 6; ++i) call.args[i] = bytes[i];
    auto action = corral::jail::RunSeccompFilter(program, call);
    if (!action) corral::fuzz::Fail("compiled filter cannot be evaluated", input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::jail;
  std::string text = corral::fuzz::AsString(data, size);
  (void)ParseKernelVersion(text.substr(0, 32));
  auto profile = ParseSeccompProfile(text);
  if (!profile) return 0;
  for (const auto& rule : profile->rules) {
    (void)SeccompRuleApplies(rule, KernelVersion{5, 10});
    (void)SeccompRuleApplies(rule, KernelVersion{3, 0});
  }
  auto program = CompileSeccompProfile(text, "fuzz.json");
  if (!program) return 0;  // e.g. a rule libseccomp refuses (named in the error)
  if (!program->empty()) RunFilter(*program, text);
  return 0;
}
