// RunCode(): one snippet through corral's runner, in a fresh jail (RunJail) or in a
// persistent sandbox (ExecInSandbox), with output captured; the result read back by
// InterpretOutcome. The payload goes in through the interpreter's stdin, a sealed memfd.
// Parent side. Errors are corral's own failures (bad code text, runner files missing,
// invalid spec, no such sandbox); whatever the code did is a CodeResult.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "runtime/code/code_result.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::code {

struct CodeRequest {
  std::string code;
  std::string lang = "python";  // the only one so far
  PythonSpec policy;            // usually spec.python of the caller's config
  // Empty: a fresh jail built from `spec` (spec.argv is replaced). Else: this persistent
  // sandbox (its own identity and limits), and from `spec` only timeout/output limit.
  std::string sandbox;
  std::optional<double> timeout_seconds;  // sandbox runs: default the sandbox's
};

Result<CodeResult> RunCode(const JailSpec& spec, const CodeRequest& request);

}  // namespace corral::runtime::code
