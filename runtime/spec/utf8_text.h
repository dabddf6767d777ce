// Config text must be UTF-8: every string in a spec ends up in JSON (a persistent
// sandbox's state file, the pool protocol, `--json` outcomes), and JSON cannot carry
// other bytes — nlohmann's dump() throws on them, which crashed `corral create` with a
// config holding a Latin-1 path (found by tests/fuzz/fuzz_config). Parent side.
#pragma once

#include <string>

#include "base/result.h"

namespace corral::runtime {

// kInvalidArgument "<origin>:<line>: not valid UTF-8 (...)", naming the first bad line.
Status CheckUtf8Text(const std::string& text, const std::string& origin);

}  // namespace corral::runtime
