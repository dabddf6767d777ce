// JailSpec <-> JSON, for the state file of a persistent sandbox (an exec into it needs the
// identity, environment, limits and seccomp profile the sandbox was created with) and the
// pool protocol. A record written before a field existed (network, unsafe.network_resolve)
// loads with that field's default; one without network and without a network namespace
// loads as network.mode host, which is what it had.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

std::string SpecToJson(const JailSpec& spec);
Result<JailSpec> SpecFromJson(const std::string& text);

}  // namespace corral::runtime
