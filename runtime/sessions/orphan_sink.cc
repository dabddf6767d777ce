#include "runtime/sessions/orphan_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace corral::runtime::sessions {

OrphanSink& OrphanSink::Instance() {
  static OrphanSink* sink = new OrphanSink();  // never destroyed: its thread runs to exit
  return *sink;
}

OrphanSink::OrphanSink() {
  wake_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  std::thread([this] { Loop(); }).detach();
}

void OrphanSink::Adopt(UniqueFd fd) {
  if (!fd) return;
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  std::lock_guard lock(mu_);
  fds_.push_back(std::move(fd));
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
}

size_t OrphanSink::pipes() const {
  std::lock_guard lock(mu_);
  return fds_.size();
}

void OrphanSink::Loop() {
  std::vector<pollfd> fds;
  char buf[65536];
  for (;;) {
    {
      std::lock_guard lock(mu_);
      fds.assign(1, pollfd{wake_.get(), POLLIN, 0});
      for (const auto& fd : fds_) fds.push_back({fd.get(), POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      uint64_t v;
      (void)!::read(wake_.get(), &v, sizeof v);
    }
    std::lock_guard lock(mu_);
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) continue;
      for (auto it = fds_.begin(); it != fds_.end(); ++it) {  // EOF or error: done with it
        if (it->get() == fds[i].fd) {
          fds_.erase(it);
          break;
        }
      }
    }
  }
}

}  // namespace corral::runtime::sessions
