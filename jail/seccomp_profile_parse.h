// Parsing of OCI/Docker seccomp profiles (JSON) into a checked, typed form that
// seccomp.cc hands to libseccomp. Parent process only (allocates, uses nlohmann-json).
//
// Supported subset (see seccomp-profiles/README.md):
//   top level: defaultAction, defaultErrnoRet, architectures, syscalls, comment
//   syscalls[]: names (or legacy name), action, errnoRet, args, comment, includes, excludes
//   args[]:     index, value, valueTwo, op
//   includes/excludes: arches (Docker's Go names, e.g. "amd64"), minKernel ("5.8");
//                      caps is rejected (the compiler does not know the jail's capabilities)
// Any other key, a duplicate key or a value of the wrong type is an error naming its JSON
// path ("syscalls[3].args[0].op: unknown operator \"SCMP_CMP_FOO\"").
#pragma once

#include <seccomp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace corral::jail {

// One argument comparison; for SCMP_CMP_MASKED_EQ `value` is the mask and `value_two`
// the datum compared with (arg & mask), as in the OCI runtime spec.
struct SeccompArgSpec {
  unsigned index = 0;  // 0..5
  scmp_compare op = SCMP_CMP_EQ;
  uint64_t value = 0;
  uint64_t value_two = 0;
};

struct KernelVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const KernelVersion&) const = default;
};

// Docker's includes/excludes: a rule applies only if the includes match and the excludes
// do not. An empty filter matches everything (includes) / nothing (excludes).
struct SeccompRuleFilter {
  std::vector<std::string> arches;  // Go architecture names
  std::optional<KernelVersion> min_kernel;
};

struct SeccompRuleSpec {
  std::string path;  // "syscalls[3]", for error messages
  std::vector<std::string> names;
  uint32_t action = 0;               // a libseccomp SCMP_ACT_* value, errno/trace data included
  std::vector<SeccompArgSpec> args;  // all must match (AND); at most one per index
  SeccompRuleFilter includes;
  SeccompRuleFilter excludes;
};

struct SeccompProfileSpec {
  uint32_t default_action = 0;
  std::vector<SeccompRuleSpec> rules;  // in file order
};

// Parses and checks `json_text`. Errors carry the JSON path but not the profile's name.
// Checks that `architectures`, when present and non-empty, lists the native architecture.
Result<SeccompProfileSpec> ParseSeccompProfile(const std::string& json_text);

// Whether `rule`'s includes/excludes let it apply on the native architecture with the
// running kernel `kernel`.
bool SeccompRuleApplies(const SeccompRuleSpec& rule, const KernelVersion& kernel);

// Parses "major.minor[.patch][-suffix]" (a kernel release or Docker's minKernel).
std::optional<KernelVersion> ParseKernelVersion(const std::string& text);

}  // namespace corral::jail
