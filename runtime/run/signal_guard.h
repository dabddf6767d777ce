// SignalGuard: corral's stop signals (SIGINT, SIGTERM, SIGHUP) through a signalfd while a
// jail runs or a pool server is asked, instead of their default action. Parent side.
#pragma once

#include <signal.h>

#include "base/unique_fd.h"

namespace corral::runtime {

// Blocks SIGINT/SIGTERM/SIGHUP for its lifetime and delivers them through a signalfd, so
// that they stop the jail (and are reported) instead of killing corral mid-cleanup.
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
  int fd() const { return fd_.get(); }

 private:
  sigset_t old_;
  UniqueFd fd_;
};

}  // namespace corral::runtime
