// Loading a config file's text in unit tests: the spec it gives, or the message it is refused
// with. Shared by the config tests (one definition, so that they also build as one unity
// translation unit: tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "runtime/spec/config.h"

namespace corral::runtime::config_text {

// The repository's example config (config.example.yaml), which must always load.
inline const std::string kExamplePath = std::string(CORRAL_SOURCE_DIR) + "/config.example.yaml";

// `yaml` loaded over `spec`; a refusal fails the calling test and names the text.
inline JailSpec Load(const std::string& yaml, JailSpec spec = {}) {
  Status s = LoadConfigText(yaml, "t.yaml", &spec);
  EXPECT_TRUE(s) << yaml << "\n" << s.error().message();
  return spec;
}

// The message `yaml` is refused with (an invalid-argument error), or "(loaded without
// error)" when it loads.
inline std::string LoadError(const std::string& yaml, JailSpec spec = {}) {
  Status s = LoadConfigText(yaml, "t.yaml", &spec);
  if (s) return "(loaded without error)";
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  return s.error().message();
}

// The smallest spec Validate() accepts: /bin/true and every default.
inline JailSpec ValidSpec() {
  JailSpec spec;
  spec.argv = {"/bin/true"};
  return spec;
}

}  // namespace corral::runtime::config_text
