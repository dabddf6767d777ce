// The steps both ways into a jail take before hardening: a fresh jail (jail/child.cc) and
// an exec into a persistent sandbox (jail/enter.cc).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "jail/hardening.h"
#include "jail/setup_record.h"
#include "jail/syscalls.h"

namespace corral::jail {

namespace {
// Stdio is juggled through fds out of the way of 0/1/2.
constexpr int kStdioScratchFd = 100;
}  // namespace

void CloseFdsExcept(KeepFds& keep) {
  if (keep.overflow) return;  // cannot tell what is unused: keep everything
  int* fds = keep.fds;
  for (int i = 1; i < keep.count; ++i) {  // insertion sort: a handful of fds
    for (int j = i; j > 0 && fds[j - 1] > fds[j]; --j) std::swap(fds[j - 1], fds[j]);
  }
  unsigned next = 3;
  for (int i = 0; i < keep.count; ++i) {
    unsigned fd = static_cast<unsigned>(fds[i]);
    if (fd > next) sys::CloseRange(next, fd - 1, 0);
    if (fd + 1 > next) next = fd + 1;
  }
  sys::CloseRange(next, ~0U, 0);
}

bool RedirectStdio(int stdin_fd, int stdout_fd, int stderr_fd, int report_fd) {
  // Through scratch copies, so that e.g. a stdout_fd of 0 is not clobbered by stdin.
  const int sources[3] = {stdin_fd, stdout_fd, stderr_fd};
  int scratch[3];
  for (int i = 0; i < 3; ++i) {
    scratch[i] = ::fcntl(sources[i], F_DUPFD_CLOEXEC, kStdioScratchFd);
    if (scratch[i] < 0) {
      ReportSetupFailure(report_fd, SetupStep::kStdio, errno, "dup stdio");
      return false;
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (::dup2(scratch[i], i) < 0) {
      ReportSetupFailure(report_fd, SetupStep::kStdio, errno, "dup2 stdio");
      return false;
    }
    ::close(scratch[i]);
  }
  return true;
}

bool JoinCgroupThroughFds(const std::vector<int>& attach_fds, int report_fd) {
  for (int fd : attach_fds) {
    // "0" means "the writing process" in both cgroup v1 and v2.
    if (::write(fd, "0", 1) != 1) {
      ReportSetupFailure(report_fd, SetupStep::kCgroupAttach, errno, "write 0 to cgroup.procs");
      return false;
    }
  }
  return true;
}

}  // namespace corral::jail
