// What this corral was built from and how: `corral --version`, `corral version --json`.
// The values are written into build_info.cc by cli/build_info.cmake on every build (the
// file is rewritten only when a value changed, so an unchanged tree relinks nothing).
#pragma once

namespace corral::cli {

struct BuildInfo {
  const char* version;     // the project version (CMakeLists.txt)
  const char* commit;      // `git describe --always --dirty`, "unknown" outside a git tree
  const char* build_type;  // CMAKE_BUILD_TYPE
  const char* compiler;    // e.g. "GNU 12.2.0"
  bool sanitize;           // CORRAL_SANITIZE
  bool static_deps;        // CORRAL_STATIC_DEPS
};

const BuildInfo& GetBuildInfo();

}  // namespace corral::cli
