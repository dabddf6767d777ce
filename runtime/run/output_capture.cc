#include "runtime/run/output_capture.h"

#include <algorithm>

namespace corral::runtime {

OutputCapture::OutputCapture(int64_t limit) {
  size_t total = limit > 0 ? static_cast<size_t>(limit) : 0;
  head_limit_ = total - total / 2;
  tail_limit_ = total / 2;
}

void OutputCapture::Append(const char* data, size_t size) {
  total_ += static_cast<int64_t>(size);
  size_t to_head = std::min(size, head_limit_ - head_.size());
  head_.append(data, to_head);
  data += to_head;
  size -= to_head;
  if (size == 0 || tail_limit_ == 0) return;
  // Only the last tail_limit_ bytes of this chunk can survive.
  if (size > tail_limit_) {
    data += size - tail_limit_;
    size = tail_limit_;
  }
  while (size > 0) {
    if (tail_.size() < tail_limit_) {
      size_t n = std::min(size, tail_limit_ - tail_.size());
      tail_.append(data, n);
      data += n;
      size -= n;
      tail_pos_ = tail_.size() % tail_limit_;
      continue;
    }
    size_t n = std::min(size, tail_limit_ - tail_pos_);
    tail_.replace(tail_pos_, n, data, n);
    tail_pos_ = (tail_pos_ + n) % tail_limit_;
    data += n;
    size -= n;
  }
}

int64_t OutputCapture::dropped_bytes() const {
  return total_ - static_cast<int64_t>(head_.size() + tail_.size());
}

StreamOutcome OutputCapture::Finish() const {
  StreamOutcome out;
  out.bytes = total_;
  out.dropped_bytes = dropped_bytes();
  out.text = head_;
  if (out.dropped_bytes > 0) {
    out.text += "\n[corral: " + std::to_string(out.dropped_bytes) + " bytes dropped]\n";
  }
  if (tail_.size() < tail_limit_) {
    out.text += tail_;
  } else {
    out.text.append(tail_, tail_pos_, std::string::npos);
    out.text.append(tail_, 0, tail_pos_);
  }
  return out;
}

}  // namespace corral::runtime
