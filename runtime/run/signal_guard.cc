#include "runtime/run/signal_guard.h"

#include <sys/signalfd.h>

namespace corral::runtime {

SignalGuard::SignalGuard() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &set, &old_);
  fd_.Reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

SignalGuard::~SignalGuard() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }

}  // namespace corral::runtime
