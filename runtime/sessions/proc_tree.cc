#include "runtime/sessions/proc_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

namespace corral::runtime::sessions {
namespace {

struct StatLine {
  pid_t ppid = 0;
  uint64_t start = 0;
};

// Parses /proc/<pid>/stat: the command name may hold spaces and ')' so fields are counted
// from the last ')'. Field 4 is ppid, field 22 starttime.
std::optional<StatLine> ReadStat(int dir_fd) {
  UniqueFd fd(::openat(dir_fd, "stat", O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  char buf[1024];
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  if (close == nullptr) return std::nullopt;
  StatLine s;
  unsigned long long start = 0;
  int ppid = 0;
  // After ") ": state(3) ppid(4) pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice threads itrealvalue starttime(22).
  if (std::sscanf(close + 2,
                  "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
                  "%llu",
                  &ppid, &start) != 2) {
    return std::nullopt;
  }
  s.ppid = ppid;
  s.start = start;
  return s;
}

UniqueFd OpenPidDir(int proc_fd, pid_t pid) {
  return UniqueFd(::openat(proc_fd, std::to_string(pid).c_str(),
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Every process of the sandbox: pid -> (ppid, start).
std::map<pid_t, StatLine> Scan(int proc_fd) {
  std::map<pid_t, StatLine> out;
  int dup_fd = ::fcntl(proc_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return out;
  DIR* dir = ::fdopendir(dup_fd);
  if (dir == nullptr) {
    ::close(dup_fd);
    return out;
  }
  ::rewinddir(dir);
  while (struct dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    UniqueFd d = OpenPidDir(proc_fd, static_cast<pid_t>(pid));
    if (!d) continue;
    if (auto s = ReadStat(d.get())) out[static_cast<pid_t>(pid)] = *s;
  }
  ::closedir(dir);
  return out;
}

}  // namespace

Result<SandboxProcs> SandboxProcs::Open(pid_t init_pid, uint64_t init_ticks) {
  UniqueFd root(::open(("/proc/" + std::to_string(init_pid) + "/root").c_str(),
                       O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return Error::FromErrno(errno, "root of the sandbox");
  // The init must still be the one recorded (its pid may have been reused).
  UniqueFd host_dir(
      ::open(("/proc/" + std::to_string(init_pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto st = host_dir ? ReadStat(host_dir.get()) : std::nullopt;
  if (!st || st->start != init_ticks) {
    return Error(ErrorCode::kNotFound, "the sandbox's init is gone");
  }
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, root.get(), "proc", &how, sizeof how));
  if (fd < 0) return Error::FromErrno(errno, "/proc of the sandbox");
  SandboxProcs procs;
  procs.proc_.Reset(fd);
  struct statfs sfs;
  if (::fstatfs(fd, &sfs) != 0 || sfs.f_type != PROC_SUPER_MAGIC) {
    return Error(ErrorCode::kIo, "the sandbox's /proc is not procfs");
  }
  return procs;
}

std::set<ProcId> SandboxProcs::ChildrenOf(pid_t parent) const {
  std::set<ProcId> out;
  for (const auto& [pid, s] : Scan(proc_.get())) {
    if (s.ppid == parent) out.insert({pid, s.start});
  }
  return out;
}

std::optional<uint64_t> SandboxProcs::StartOf(pid_t pid) const {
  UniqueFd d = OpenPidDir(proc_.get(), pid);
  if (!d) return std::nullopt;
  auto s = ReadStat(d.get());
  if (!s) return std::nullopt;
  return s->start;
}

bool SandboxProcs::Signal(const ProcId& id, int signo) const {
  UniqueFd d = OpenPidDir(proc_.get(), id.first);
  if (!d) return false;
  auto s = ReadStat(d.get());  // after the open: the fd pins this very process
  if (!s || s->start != id.second) return false;
  return ::syscall(SYS_pidfd_send_signal, d.get(), signo, nullptr, 0) == 0;
}

size_t SandboxProcs::KillCommandTree(pid_t shell, const std::set<ProcId>& keep) const {
  std::set<ProcId> stopped;
  for (int round = 0; round < 50; ++round) {
    auto all = Scan(proc_.get());
    // Descendants of the shell outside the kept subtrees, breadth first.
    std::vector<pid_t> frontier{shell};
    size_t fresh = 0;
    while (!frontier.empty()) {
      pid_t p = frontier.back();
      frontier.pop_back();
      for (const auto& [pid, s] : all) {
        if (s.ppid != p) continue;
        ProcId id{pid, s.start};
        if (p == shell && keep.count(id) != 0) continue;
        frontier.push_back(pid);
        if (stopped.insert(id).second) {
          ++fresh;
          (void)Signal(id, SIGSTOP);
        }
      }
    }
    if (fresh == 0) break;
  }
  size_t killed = 0;
  for (const auto& id : stopped) {
    if (Signal(id, SIGKILL)) ++killed;
  }
  return killed;
}

}  // namespace corral::runtime::sessions
