// The fixture of the workspace overlay tests (workspace_overlay_test.cc,
// workspace_snapshot_test.cc): a state directory of their own (CORRAL_STATE_DIR: overlays,
// snapshots) and a user-data directory the sandboxes' workspaces lie over. Root only.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include "tests/integration/sandbox_fixture.h"
#include "tests/support/temp_dir.h"

namespace corral::test {

class OverlayTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ::setenv("CORRAL_STATE_DIR", state_.path().c_str(), 1);
    ASSERT_EQ(::chmod(user_data_.path().c_str(), 0755), 0);
  }
  void TearDown() override {
    SandboxTest::TearDown();
    ::unsetenv("CORRAL_STATE_DIR");
  }

  TempDir state_;
  TempDir user_data_;
};

}  // namespace corral::test
