// OutputCapture: keeps at most `limit` bytes of a stream — the first half and the last
// half — however much is written, and counts the rest. Memory use is bounded by `limit`
// no matter how much the command floods. Parent side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/run/outcome.h"

namespace corral::runtime {

class OutputCapture {
 public:
  explicit OutputCapture(int64_t limit);

  void Append(const char* data, size_t size);

  int64_t total_bytes() const { return total_; }
  int64_t dropped_bytes() const;
  // Head, then (if anything was dropped) "\n[corral: N bytes dropped]\n", then tail.
  StreamOutcome Finish() const;

 private:
  size_t head_limit_;
  size_t tail_limit_;
  std::string head_;
  std::string tail_;     // ring buffer of the last tail_limit_ bytes once full
  size_t tail_pos_ = 0;  // next write position in the ring once full
  int64_t total_ = 0;
};

}  // namespace corral::runtime
