// The binaries under test, from the compile definitions of corral_integration_tests
// (CORRAL_BINARY, CORRAL_PROBE, CORRAL_SOURCE_DIR), and shorthands that run them.
// Header-only: include it from integration tests only.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/run_corral.h"

#if !defined(CORRAL_BINARY) || !defined(CORRAL_PROBE) || !defined(CORRAL_SOURCE_DIR)
#error "corral_paths.h needs CORRAL_BINARY, CORRAL_PROBE and CORRAL_SOURCE_DIR"
#endif

namespace corral::test {

// $CORRAL_TEST_BINARY / $CORRAL_TEST_PROBE override the built-in paths: the cgroup v2 VM
// (tests/vm/run_corral_vmtest.sh) copies both to another place than the build tree.
inline std::string PathFromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
inline std::string CorralBinary() { return PathFromEnv("CORRAL_TEST_BINARY", CORRAL_BINARY); }
inline std::string ProbeBinary() { return PathFromEnv("CORRAL_TEST_PROBE", CORRAL_PROBE); }
inline std::string SourceDir() { return CORRAL_SOURCE_DIR; }

// corral <args...>
inline Result<RunResult> RunCorral(const std::vector<std::string>& args,
                                   const RunOptions& options = {}) {
  return RunProgram(CorralBinary(), args, options);
}

// corral run --json -v <probe>:/opt/probe/corral_probe:ro <corral_flags...> --
//   /opt/probe/corral_probe <probe_args...>
inline Result<JailRun> RunProbe(const std::vector<std::string>& corral_flags,
                                const std::vector<std::string>& probe_args,
                                const RunOptions& options = {}) {
  return RunJailed(CorralBinary(), ProbeRunArgs(ProbeBinary(), corral_flags, probe_args), options);
}

}  // namespace corral::test
