// bench/scale: the step list's parsing and the goals judged from made-up figures.
#include <gtest/gtest.h>

#include "bench/scale.h"

namespace corral::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(ScaleSteps, ParsesAscendingCountsAndRefusesTheRestNamingTheItem) {
  auto steps = ParseScaleSteps("1000,4000,10000");
  ASSERT_TRUE(steps) << steps.error().message();
  EXPECT_EQ(*steps, (std::vector<int>{1000, 4000, 10000}));
  for (const char* bad : {"", "1000,", "ten", "0", "-5", "4000,1000", "1000,1000", "200000"}) {
    auto r = ParseScaleSteps(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("--scale"), std::string::npos) << r.error().message();
  }
  EXPECT_NE(ParseScaleSteps("4000,1000").error().message().find("must grow"), std::string::npos);
}

// A step that brought the count to `up`, its own `removed` of them gone again afterwards.
ScaleStep Step(int up, int removed, double mib_per_sandbox, double up_s, double down_s) {
  ScaleStep s;
  s.target = up;
  s.up = up;
  s.removed = removed;
  s.host_bytes_per_sandbox = mib_per_sandbox * kMiB;
  s.up_s = up_s;
  s.down_s = down_s;
  return s;
}

const ScaleGoal* Goal(const std::vector<ScaleGoal>& goals, const std::string& start) {
  for (const ScaleGoal& g : goals) {
    if (g.what.rfind(start, 0) == 0) return &g;
  }
  return nullptr;
}

// 1,000 / 4,000 / 10,000 on a 16-core cgroup v2 host, with the MiB per sandbox and the
// seconds up and down of each step; every goal must come out as `verdict`.
void ExpectEveryGoalOnABigV2Host(const double mib[3], const double up_s[3], const double down_s[3],
                                 const std::string& verdict) {
  ScaleFigures f;
  f.machine.cores = 16;
  f.machine.cgroup_mode = "v2 (unified)";
  f.steps = {Step(1000, 1000, mib[0], up_s[0], down_s[0]),
             Step(4000, 3000, mib[1], up_s[1], down_s[1]),
             Step(10000, 6000, mib[2], up_s[2], down_s[2])};
  auto goals = JudgeScale(f);
  for (const char* goal :
       {"host memory per idle sandbox stays flat", "host memory per idle sandbox <= 1.5 MiB",
        "removal at least as fast", "10,000 sandboxes up"}) {
    const ScaleGoal* g = Goal(goals, goal);
    ASSERT_NE(g, nullptr) << goal;
    EXPECT_EQ(g->verdict, verdict) << goal << ": " << g->detail;
  }
}

TEST(ScaleGoals, FlatMemoryAndFastRemovalPassOnABigV2Host) {
  const double mib[] = {1.2, 1.3, 1.4}, up[] = {1.0, 3.0, 8.0}, down[] = {0.8, 2.0, 6.0};
  ExpectEveryGoalOnABigV2Host(mib, up, down, "PASS");
}

TEST(ScaleGoals, QuadraticMemoryAndSlowRemovalMiss) {
  // The figures of the issue: 1.22 MiB at 1,000, 5.74 MiB at 10,000, removal at 8.7/s.
  const double mib[] = {1.22, 2.74, 5.74}, up[] = {1.0, 10.7, 129}, down[] = {115, 345, 690};
  ExpectEveryGoalOnABigV2Host(mib, up, down, "MISS");
}

TEST(ScaleGoals, TheTenThousandGoalIsNotJudgedOnASmallOrV1Host) {
  ScaleFigures f;
  f.machine.cores = 2;
  f.machine.cgroup_mode = "hybrid (v1 controllers, v2 at /sys/fs/cgroup/unified)";
  f.steps = {Step(1000, 1000, 1.0, 10, 5)};
  auto goals = JudgeScale(f);
  EXPECT_EQ(Goal(goals, "10,000 sandboxes up")->verdict, "not judged");
  EXPECT_NE(Goal(goals, "10,000 sandboxes up")->detail.find("2 cores"), std::string::npos);
  // One step alone says nothing about flatness.
  EXPECT_EQ(Goal(goals, "host memory per idle sandbox stays flat")->verdict, "not judged");
}

}  // namespace
}  // namespace corral::bench
