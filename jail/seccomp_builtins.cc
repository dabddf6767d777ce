#include "jail/seccomp_builtins.h"

#include "jail/seccomp_embedded.h"

namespace corral::jail {

std::vector<std::string> BuiltinSeccompProfileNames() {
  std::vector<std::string> names;
  for (const EmbeddedProfile* p = kEmbeddedProfiles; p->name != nullptr; ++p) {
    names.emplace_back(p->name);
  }
  return names;
}

Result<std::string> BuiltinSeccompProfileText(const std::string& name) {
  std::string known;
  for (const EmbeddedProfile* p = kEmbeddedProfiles; p->name != nullptr; ++p) {
    if (name == p->name) return std::string(p->json);
    known += known.empty() ? p->name : std::string(", ") + p->name;
  }
  return Error(ErrorCode::kNotFound,
               "no built-in seccomp profile \"" + name + "\" (built in: " + known + ")");
}

}  // namespace corral::jail
