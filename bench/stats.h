// Statistics for the benchmark: order statistics of latency samples and ratios between
// two launchers measured in interleaved rounds (A B A B ...), so that drift of the
// machine (frequency scaling, page cache, other tenants) hits both sides alike.
//
// Pure functions on plain vectors, and the few helpers every figure is written with; no I/O
// (MsSince reads the clock).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace corral::bench {

inline constexpr double kMiB = 1024.0 * 1024.0;

// `v` printed with the printf format `fmt` ("%.2f").
std::string Fmt(const char* fmt, double v);

// Milliseconds from `t0` to now on the steady clock.
double MsSince(std::chrono::steady_clock::time_point t0);

struct Summary {
  size_t count = 0;
  double min = 0;
  double median = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
  double mean = 0;
};

// Percentile p in [0, 100] with linear interpolation between closest ranks (the
// "R-7"/NumPy default). Empty input -> nullopt.
std::optional<double> Percentile(std::vector<double> samples, double p);

// Summary of the samples; count == 0 for empty input (all fields 0).
Summary Summarize(const std::vector<double>& samples);

// Ratio of A to B from paired samples a[i], b[i] taken in the same round.
struct PairedRatio {
  size_t pairs = 0;
  double median_ratio = 0;  // median over i of a[i] / b[i]: the headline figure
  double low = 0;           // 10th percentile of the per-pair ratios
  double high = 0;          // 90th percentile
  double q1 = 0;            // 25th percentile: with q3, the spread a verdict must clear
  double q3 = 0;            // 75th percentile
};

// Uses the first min(a.size(), b.size()) pairs; pairs with b[i] <= 0 are ignored.
// No usable pair -> nullopt.
std::optional<PairedRatio> ComputePairedRatio(const std::vector<double>& a,
                                              const std::vector<double>& b);

// Order in which `entries` launchers run in round `round` of an interleaved schedule:
// launcher `round % entries` first, the others in an order shuffled per round
// (deterministically), so that no launcher always runs right after the same one.
std::vector<size_t> InterleavedOrder(size_t entries, size_t round);

}  // namespace corral::bench
