// The seccomp profiles built into the binary (seccomp-profiles/*.json, embedded at build
// time so that a corral never runs with a profile other than the one it was tested with):
// their names and texts. Its own small library (corral::seccomp_builtins) so that the
// spec's validation can name the built-in profiles without linking the jail.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace corral::jail {

// Names of the profiles built into the binary, e.g. "default".
std::vector<std::string> BuiltinSeccompProfileNames();
// The JSON text of a built-in profile, or kNotFound naming the ones there are.
Result<std::string> BuiltinSeccompProfileText(const std::string& name);

}  // namespace corral::jail
