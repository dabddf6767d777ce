// PhaseTrace: with CORRAL_TRACE=1 in the environment, prints how long each phase of a run
// took to stderr ("corral: trace: plan 0.412 ms"). For finding where launch time goes;
// `corral bench` reports the totals.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace corral::runtime {

class PhaseTrace {
 public:
  PhaseTrace() : enabled_(std::getenv("CORRAL_TRACE") != nullptr), last_(Now()) {}
  void Mark(const char* phase) {
    if (!enabled_) return;
    auto now = Now();
    std::fprintf(stderr, "corral: trace: %-14s %8.3f ms\n", phase,
                 std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  static std::chrono::steady_clock::time_point Now() { return std::chrono::steady_clock::now(); }
  bool enabled_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace corral::runtime
