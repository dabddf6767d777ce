#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <utility>

namespace corral::bench {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::optional<double> Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  p = std::clamp(p, 0.0, 100.0);
  const double rank = p / 100.0 * static_cast<double>(samples.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, samples.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return samples[lo] + (samples[hi] - samples[lo]) * frac;
}

Summary Summarize(const std::vector<double>& samples) {
  Summary s;
  if (samples.empty()) return s;
  s.count = samples.size();
  s.min = *std::min_element(samples.begin(), samples.end());
  s.max = *std::max_element(samples.begin(), samples.end());
  s.mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  s.median = *Percentile(samples, 50);
  s.p90 = *Percentile(samples, 90);
  s.p99 = *Percentile(samples, 99);
  return s;
}

std::optional<PairedRatio> ComputePairedRatio(const std::vector<double>& a,
                                              const std::vector<double>& b) {
  std::vector<double> ratios;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (b[i] > 0) ratios.push_back(a[i] / b[i]);
  }
  if (ratios.empty()) return std::nullopt;
  PairedRatio r;
  r.pairs = ratios.size();
  r.median_ratio = *Percentile(ratios, 50);
  r.low = *Percentile(ratios, 10);
  r.high = *Percentile(ratios, 90);
  r.q1 = *Percentile(ratios, 25);
  r.q3 = *Percentile(ratios, 75);
  return r;
}

namespace {

// splitmix64: a fixed, portable generator, so a round's order is the same on every build.
uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

// The first place rotates (every launcher leads once per `entries` rounds); the rest are
// shuffled with the round as seed. A plain rotation kept every launcher right behind the
// same neighbour, so whatever one launcher left warm (on cgroup v1: the RCU grace period
// of a cgroup attach) always favoured the next: +seccomp looked cheaper than +cgroup.
std::vector<size_t> InterleavedOrder(size_t entries, size_t round) {
  std::vector<size_t> order(entries);
  if (entries == 0) return order;
  for (size_t i = 0; i < entries; ++i) order[i] = (i + round) % entries;
  uint64_t state = 0x636f7272616cULL ^ (static_cast<uint64_t>(round) * 0x2545f4914f6cdd1dULL);
  for (size_t i = entries - 1; i > 1; --i) {
    size_t j = 1 + static_cast<size_t>(SplitMix(state) % i);  // in [1, i]
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace corral::bench
