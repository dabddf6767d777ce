// JailSpec <-> JSON, for the state file of a persistent sandbox (an exec into it needs the
// identity, environment, limits and seccomp profile the sandbox was created with).
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

std::string SpecToJson(const JailSpec& spec);
Result<JailSpec> SpecFromJson(const std::string& text);

}  // namespace corral::runtime
