// One-line progress display on stderr: rewritten in place on a terminal, one line per
// phase change otherwise (so CI logs stay short).
#pragma once

#include <chrono>
#include <string>

namespace corral::bench {

class Progress {
 public:
  Progress();
  void Update(const std::string& what);
  void Done();

 private:
  bool tty_;
  std::string last_phase_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace corral::bench
