// A sandbox's store record as JSON (<name>/state.json, and a claim's notes): private to
// runtime/sandboxes/.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/sandboxes/sandbox_store.h"

namespace corral::runtime {

std::string RecordToJson(const SandboxRecord& r);
// `origin` names the file in errors ("...: corrupt state: ...").
Result<SandboxRecord> RecordFromJson(const std::string& text, const std::string& origin);

}  // namespace corral::runtime
