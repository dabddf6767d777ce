// The seccomp profiles built into the binary (generated from seccomp-profiles/*.json).
#pragma once

namespace corral::jail {

struct EmbeddedProfile {
  const char* name;  // file name without .json
  const char* json;
};
// Terminated by {nullptr, nullptr}.
extern const EmbeddedProfile kEmbeddedProfiles[];

}  // namespace corral::jail
