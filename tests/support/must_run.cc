#include "tests/support/must_run.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace corral::test {

bool MustRun() {
  const char* v = std::getenv("CORRAL_TESTS_MUST_RUN");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

bool IsRoot() { return geteuid() == 0; }

void RequireRoot() { CORRAL_REQUIRE_ROOT(); }

}  // namespace corral::test
