// What `corral code run` hands the jail's interpreter: the argv that starts corral's runner
// (python/corral/_runner.py) and the JSON payload it reads from stdin — the snippet, the
// python: policy, a nonce for the result header, and the sources of the corral package.
// The host never parses the snippet: it only copies it into the payload. Parent side.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::code {

inline constexpr size_t kMaxCodeBytes = 4 * 1024 * 1024;

// The directory holding corral's Python package (<dir>/corral/_runner.py, ...):
// $CORRAL_PYTHON_DIR if set (nothing else then), else <own dir>/../../share/corral/python
// (the installed layout: libexec/corral/corral-cli), the install prefix's, the source tree's.
// Only a directory owned by root or by us and not group/other-writable is taken.
Result<std::string> FindPythonDir();

// {"corral": <__init__.py>, "corral._runner": <_runner.py>, ...} from <dir>/corral/*.py.
Result<std::vector<std::pair<std::string, std::string>>> ReadCorralModules(const std::string& dir);

// kInvalidArgument when the code is too large or not UTF-8 text.
Status CheckCode(const std::string& code);

std::string BuildPayload(const std::string& code, const PythonSpec& policy,
                         const std::string& nonce,
                         const std::vector<std::pair<std::string, std::string>>& modules);

// {interpreter, "-I", "-c", <bootstrap>}: -I so that no PYTHON* variable, user site or
// working directory changes what the interpreter loads before the runner.
std::vector<std::string> RunnerArgv(const std::string& interpreter);

// 32 hex digits from getrandom().
std::string NewNonce();

}  // namespace corral::runtime::code
