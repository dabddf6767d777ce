#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "bench/stats.h"

namespace corral::bench {
namespace {

TEST(BenchPercentile, InterpolatesBetweenClosestRanks) {
  const std::vector<double> v = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(*Percentile(v, 0), 10);
  EXPECT_DOUBLE_EQ(*Percentile(v, 50), 30);
  EXPECT_DOUBLE_EQ(*Percentile(v, 100), 50);
  EXPECT_DOUBLE_EQ(*Percentile(v, 90), 46);  // rank 3.6 -> 40 + 0.6 * 10
  EXPECT_DOUBLE_EQ(*Percentile(v, 25), 20);
  EXPECT_DOUBLE_EQ(*Percentile(v, 10), 14);
}

TEST(BenchPercentile, IgnoresInputOrderAndClampsP) {
  const std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(*Percentile(v, 50), 3);
  EXPECT_DOUBLE_EQ(*Percentile(v, -5), 1);
  EXPECT_DOUBLE_EQ(*Percentile(v, 250), 5);
}

TEST(BenchPercentile, EvenCountMedianIsMidpointAndSingleSampleIsItself) {
  EXPECT_DOUBLE_EQ(*Percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(*Percentile({7}, 99), 7);
  EXPECT_FALSE(Percentile({}, 50).has_value());
}

TEST(BenchSummarize, ReportsOrderStatisticsOfOneHundredSamples) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, reversed
  Summary s = Summarize(v);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.median, 50.5);
  EXPECT_NEAR(s.p90, 90.1, 1e-9);
  EXPECT_NEAR(s.p99, 99.01, 1e-9);
}

TEST(BenchSummarize, EmptyInputIsAllZero) {
  Summary s = Summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.median, 0);
}

TEST(BenchPairedRatio, UsesPerRoundRatiosSoDriftCancels) {
  // B doubles over the run (drift); A is always 3x B in the same round. The ratio of the
  // medians would be skewed by which samples land in the middle; paired ratios are exact.
  std::vector<double> a, b;
  for (int i = 1; i <= 9; ++i) {
    b.push_back(i);
    a.push_back(3.0 * i);
  }
  auto r = ComputePairedRatio(a, b);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->pairs, 9u);
  EXPECT_DOUBLE_EQ(r->median_ratio, 3.0);
  EXPECT_DOUBLE_EQ(r->low, 3.0);
  EXPECT_DOUBLE_EQ(r->high, 3.0);
}

TEST(BenchPairedRatio, MedianOfRatiosResistsOneOutlierRound) {
  const std::vector<double> a = {2, 2, 2, 2, 200};
  const std::vector<double> b = {1, 1, 1, 1, 1};
  auto r = ComputePairedRatio(a, b);
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->median_ratio, 2.0);
  EXPECT_GT(r->high, 2.0);
}

TEST(BenchPairedRatio, PairsOnlyTheCommonPrefixAndSkipsZeroDenominators) {
  auto r = ComputePairedRatio({4, 6, 8, 100}, {2, 0, 4});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->pairs, 2u);  // (4,2) and (8,4); (6,0) skipped; 100 unpaired
  EXPECT_DOUBLE_EQ(r->median_ratio, 2.0);
  EXPECT_FALSE(ComputePairedRatio({1}, {0}).has_value());
  EXPECT_FALSE(ComputePairedRatio({}, {1, 2}).has_value());
}

TEST(BenchInterleavedOrder, EveryRoundIsAPermutationAndFirstPlaceRotates) {
  std::set<size_t> firsts;
  for (size_t round = 0; round < 4; ++round) {
    auto order = InterleavedOrder(4, round);
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 3}));
    firsts.insert(order.front());
  }
  EXPECT_EQ(firsts.size(), 4u);
  EXPECT_TRUE(InterleavedOrder(0, 3).empty());
}

// A rotation kept every launcher right behind the same neighbour in almost every round
// (the +seccomp rung always followed +cgroup and inherited its warm cgroup attach).
TEST(BenchInterleavedOrder, NeighboursVaryFromRoundToRound) {
  constexpr size_t kEntries = 8, kRounds = 60;
  std::vector<std::set<size_t>> predecessors(kEntries);
  std::vector<size_t> first_count(kEntries, 0);
  for (size_t round = 0; round < kRounds; ++round) {
    auto order = InterleavedOrder(kEntries, round);
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < kEntries; ++i) ASSERT_EQ(sorted[i], i);
    EXPECT_EQ(order.front(), round % kEntries);
    for (size_t i = 1; i < kEntries; ++i) predecessors[order[i]].insert(order[i - 1]);
    ++first_count[order.front()];
  }
  for (size_t e = 0; e < kEntries; ++e) {
    EXPECT_GE(predecessors[e].size(), 4u) << "launcher " << e;
    EXPECT_GE(first_count[e], kRounds / kEntries);
  }
  EXPECT_EQ(InterleavedOrder(5, 7), InterleavedOrder(5, 7)) << "deterministic";
  EXPECT_EQ(InterleavedOrder(1, 3), std::vector<size_t>{0});
}

}  // namespace
}  // namespace corral::bench
