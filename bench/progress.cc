#include "bench/progress.h"

#include <unistd.h>

#include <cstdio>

namespace corral::bench {

Progress::Progress() : tty_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

void Progress::Update(const std::string& what) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) {
    fprintf(stderr, "\r\033[K[bench %5.1fs] %s", s, what.c_str());
    fflush(stderr);
    return;
  }
  // Phase = text before the first ':' ("latency /bin/true"), printed once.
  std::string phase = what.substr(0, what.find(':'));
  if (phase == last_phase_) return;
  last_phase_ = phase;
  fprintf(stderr, "[bench %5.1fs] %s\n", s, phase.c_str());
}

void Progress::Done() {
  if (tty_) fprintf(stderr, "\r\033[K");
}

}  // namespace corral::bench
