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

ScaleStep Step(int up, double mib_per_sandbox, double up_s, double down_s) {
  ScaleStep s;
  s.target = up;
  s.up = up;
  s.removed = up;
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

TEST(ScaleGoals, FlatMemoryAndFastRemovalPassOnABigV2Host) {
  ScaleFigures f;
  f.machine.cores = 16;
  f.machine.cgroup_mode = "v2 (unified)";
  f.steps = {Step(1000, 1.2, 1.0, 0.8), Step(4000, 1.3, 3.0, 2.0), Step(10000, 1.4, 8.0, 6.0)};
  f.steps[1].removed = 3000;  // each step removes its own
  f.steps[2].removed = 6000;
  auto goals = JudgeScale(f);
  ASSERT_NE(Goal(goals, "host memory per idle sandbox stays flat"), nullptr);
  EXPECT_EQ(Goal(goals, "host memory per idle sandbox stays flat")->verdict, "PASS");
  EXPECT_EQ(Goal(goals, "host memory per idle sandbox <= 1.5 MiB")->verdict, "PASS");
  EXPECT_EQ(Goal(goals, "removal at least as fast")->verdict, "PASS");
  EXPECT_EQ(Goal(goals, "10,000 sandboxes up")->verdict, "PASS");
}

TEST(ScaleGoals, QuadraticMemoryAndSlowRemovalMiss) {
  ScaleFigures f;
  f.machine.cores = 16;
  f.machine.cgroup_mode = "v2 (unified)";
  // The figures of the issue: 1.22 MiB at 1,000, 5.74 MiB at 10,000, removal at 8.7/s.
  f.steps = {Step(1000, 1.22, 1.0, 115), Step(4000, 2.74, 10.7, 345), Step(10000, 5.74, 129, 690)};
  f.steps[1].removed = 3000;
  f.steps[2].removed = 6000;
  auto goals = JudgeScale(f);
  EXPECT_EQ(Goal(goals, "host memory per idle sandbox stays flat")->verdict, "MISS");
  EXPECT_EQ(Goal(goals, "host memory per idle sandbox <= 1.5 MiB")->verdict, "MISS");
  EXPECT_EQ(Goal(goals, "removal at least as fast")->verdict, "MISS");
  EXPECT_EQ(Goal(goals, "10,000 sandboxes up")->verdict, "MISS");
}

TEST(ScaleGoals, TheTenThousandGoalIsNotJudgedOnASmallOrV1Host) {
  ScaleFigures f;
  f.machine.cores = 2;
  f.machine.cgroup_mode = "hybrid (v1 controllers, v2 at /sys/fs/cgroup/unified)";
  f.steps = {Step(1000, 1.0, 10, 5)};
  auto goals = JudgeScale(f);
  EXPECT_EQ(Goal(goals, "10,000 sandboxes up")->verdict, "not judged");
  EXPECT_NE(Goal(goals, "10,000 sandboxes up")->detail.find("2 cores"), std::string::npos);
  // One step alone says nothing about flatness.
  EXPECT_EQ(Goal(goals, "host memory per idle sandbox stays flat")->verdict, "not judged");
}

}  // namespace
}  // namespace corral::bench
