// The rootless rows of `corral bench`: corral's rootless `corral run` (cold, and served by
// a rootless `corral pool`) and bwrap, all as the same unprivileged account, side by side
// in the same run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/launcher.h"

namespace corral::bench {

// The account both rows run as (dropped to with setpriv). The integration tests create it
// (tests/support/test_user.h); without it both rows are skipped and say so.
inline constexpr char kRootlessBenchUser[] = "corral-test";

// "corral run, rootless", "corral run, rootless, pooled" and "bwrap, unprivileged".
std::vector<std::unique_ptr<Launcher>> MakeRootlessRows(const std::string& corral_exe);

}  // namespace corral::bench
