// Skip policy for tests that need something the host may lack (root, a kernel feature).
//
// A test that cannot run here skips with a reason. CI sets CORRAL_TESTS_MUST_RUN=1, which
// turns every such skip into a failure, so a missing privilege or feature cannot hide a
// regression behind a green run (the idea of bubblewrap's BWRAP_MUST_WORK).
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace corral::test {

// True when env CORRAL_TESTS_MUST_RUN is "1".
bool MustRun();

// True when the effective uid is 0.
bool IsRoot();

// For SetUp(): skips (or fails, under CORRAL_TESTS_MUST_RUN=1) the current test when not
// root. gtest does not run the test body after a skip or a fatal failure in SetUp().
void RequireRoot();

}  // namespace corral::test

// Skips the current test with `reason`, or fails it when CORRAL_TESTS_MUST_RUN=1. Like
// GTEST_SKIP() and FAIL(), it returns from the enclosing (void) function.
#define CORRAL_SKIP_OR_FAIL(reason)                                       \
  do {                                                                    \
    if (::corral::test::MustRun()) {                                      \
      FAIL() << "CORRAL_TESTS_MUST_RUN=1 forbids skipping: " << (reason); \
    } else {                                                              \
      GTEST_SKIP() << (reason);                                           \
    }                                                                     \
  } while (0)

// In a test body: CORRAL_SKIP_OR_FAIL unless running as root.
#define CORRAL_REQUIRE_ROOT()                                                      \
  do {                                                                             \
    if (!::corral::test::IsRoot()) CORRAL_SKIP_OR_FAIL("needs root (real jails)"); \
  } while (0)
