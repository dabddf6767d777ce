// The config file's `python:` section: the policy of `corral code run` (runtime/code/).
// Its own file so that another shape of config (a design's `sandbox: {..., python}`) can
// reuse the same rule. Internal to runtime/spec; config.cc's schema includes it. Parent side.
//
//   python:
//     interpreter: /usr/bin/python3       # inside the jail
//     scan: {mode: deny|warn|off, deny_calls: [...], deny_modules: [...],
//            deny_paths: [...], deny_environ: true}
//     allowlist: [math, json, re]         # empty: any module
//     commands: [curl, /usr/bin/jq]       # for corral.secure_command
//     command_output_limit: 1m
//
// commands are resolved when the file loads: a name is looked up in kCommandSearchPath, a
// path must be absolute; either must be an executable regular file, else a problem naming
// python.commands[i].
#pragma once

#include <string>
#include <utility>

#include "base/result.h"
#include "runtime/spec/config_schema.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::config_schema {

inline constexpr const char* kCommandSearchPath = "/usr/local/bin:/usr/bin:/bin";

Rule<JailSpec> PythonSectionKey();

// The design's `sandbox.python` (config_design.h): the same keys plus `version: "3"` or
// "3.N", which sets interpreter to /usr/bin/python3[.N]; version and interpreter together
// are an error. Whether that interpreter exists is checked once the whole file is read.
Rule<JailSpec> DesignPythonSectionKey();

// One python.commands entry -> (name, absolute path); the error says why not (no field path).
Result<std::pair<std::string, std::string>> ResolvePythonCommand(const std::string& entry);

}  // namespace corral::runtime::config_schema
