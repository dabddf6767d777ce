// The unprivileged account the integration tests run corral as (rootless mode), and how
// a test drops to it.
//
// EnsureTestUser() creates a system account `corral-test` (no home, no login shell) when
// the host lacks one, with `useradd --system`; it is left in place afterwards, so the
// setup is idempotent (tests/README.md says so; `userdel corral-test` removes it). The
// test (root) then runs corral through `setpriv --reuid --regid --clear-groups`, with a
// runtime directory of the user's own as XDG_RUNTIME_DIR. Parent (test) process only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace corral::test {

inline constexpr char kTestUserName[] = "corral-test";

struct TestUser {
  uid_t uid = 0;
  gid_t gid = 0;
};

Result<TestUser> EnsureTestUser();

// `setpriv ... -- program args...`: argv[0] of the result is setpriv's path.
std::vector<std::string> AsTestUser(const TestUser& user, const std::string& program,
                                    const std::vector<std::string>& args);

inline constexpr char kSetprivBinary[] = "/usr/bin/setpriv";

// Whether the host has the memory controller on cgroup v2 (else: v1 or hybrid, where no
// unprivileged user can have memory/cpu/pids limits).
bool MemoryOnCgroupV2();

}  // namespace corral::test
