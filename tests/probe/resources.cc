// Resource actions for the limit tests: each one pushes on one limit (memory, pids, CPU,
// output, process lifetime) and reports how far it got, if it survives to report.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "tests/probe/json_writer.h"
#include "tests/probe/probe.h"

namespace corral::probe {
namespace {

double Now(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Optional numeric argument `index`, or `fallback` when absent. False if malformed.
bool OptionalNumber(const Args& args, size_t index, long long fallback, long long* out) {
  if (index >= args.size()) {
    *out = fallback;
    return true;
  }
  return ParseNumber(args[index], out);
}

}  // namespace

int CmdAlloc(const Args& args) {
  long long mb;
  if (args.size() != 1 || !ParseNumber(args[0], &mb)) return UsageError("alloc MB");
  constexpr size_t kChunk = 1 << 20;
  long long done = 0;
  int err = 0;
  for (; done < mb; ++done) {
    void* p = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      err = errno;
      break;
    }
    // Touching every page is what makes the memory count against the cgroup.
    memset(p, 0x5a, kChunk);
  }
  JsonWriter j;
  j.BeginObject().Field("command", "alloc").Field("requested_mb", mb);
  j.Field("allocated_mb", done).ErrnoField("errno", err).EndObject();
  return PrintJson(j) ? 0 : 1;
}

// Forks sleepers until the kernel refuses (the pids limit) or MAX is reached, reports, and
// exits, leaving the sleepers behind for corral to kill. They sleep CHILD_SECONDS at most,
// so a corral that fails to kill them leaks them for that long (the leak check sees it).
int CmdForkbomb(const Args& args) {
  long long max, child_seconds;
  if (args.size() > 2 || !OptionalNumber(args, 0, 100000, &max) ||
      !OptionalNumber(args, 1, 30, &child_seconds)) {
    return UsageError("forkbomb [MAX] [CHILD_SECONDS]");
  }
  long long forked = 0;
  int err = 0;
  while (forked < max) {
    pid_t pid = fork();
    if (pid == 0) {
      SleepSeconds(static_cast<double>(child_seconds));
      _exit(0);
    }
    if (pid < 0) {
      err = errno;
      break;
    }
    ++forked;
  }
  JsonWriter j;
  j.BeginObject().Field("command", "forkbomb").Field("forked", forked);
  j.ErrnoField("errno", err).EndObject();
  return PrintJson(j) ? 0 : 1;
}

int CmdSpin(const Args& args) {
  long long seconds;
  if (args.size() != 1 || !ParseNumber(args[0], &seconds)) return UsageError("spin SECONDS");
  double start = Now(CLOCK_MONOTONIC);
  volatile unsigned long long iterations = 0;
  while (Now(CLOCK_MONOTONIC) - start < static_cast<double>(seconds)) {
    for (int i = 0; i < 100000; ++i) iterations = iterations + 1;
  }
  JsonWriter j;
  j.BeginObject().Field("command", "spin").Key("wall_s").Double(Now(CLOCK_MONOTONIC) - start);
  j.Key("cpu_s").Double(Now(CLOCK_PROCESS_CPUTIME_ID));
  j.Field("iterations", static_cast<long long>(iterations)).EndObject();
  return PrintJson(j) ? 0 : 1;
}

// The payload goes to stdout, so the summary goes to stderr.
int CmdFlood(const Args& args) {
  long long bytes;
  if (args.size() != 1 || !ParseNumber(args[0], &bytes)) return UsageError("flood BYTES");
  signal(SIGPIPE, SIG_IGN);  // report EPIPE instead of dying of it
  static char chunk[64 * 1024];
  memset(chunk, 'x', sizeof(chunk));
  long long written = 0;
  int err = 0;
  while (written < bytes) {
    size_t want = static_cast<size_t>(std::min<long long>(bytes - written, sizeof(chunk)));
    ssize_t n = write(STDOUT_FILENO, chunk, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    written += n;
  }
  JsonWriter j;
  j.BeginObject().Field("command", "flood").Field("requested", bytes);
  j.Field("written", written).ErrnoField("errno", err).EndObject();
  std::string text = j.str() + "\n";
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
  return 0;
}

// A process that tries to outlive its command: new session, double fork, reparented to
// init. It keeps stdout/stderr open on purpose, as `cmd &` in a shell does; corral must
// neither wait for it nor let it survive the run.
int CmdDaemon(const Args& args) {
  long long seconds;
  if (args.size() > 1 || !OptionalNumber(args, 0, 60, &seconds)) {
    return UsageError("daemon [SECONDS]");
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return UsageError("pipe2 failed: " + ErrnoName(errno));
  pid_t middle = fork();
  if (middle == 0) {
    close(fds[0]);
    setsid();
    pid_t daemon = fork();
    if (daemon == 0) {
      close(fds[1]);
      SleepSeconds(static_cast<double>(seconds));
      _exit(0);
    }
    ssize_t ignored = write(fds[1], &daemon, sizeof(daemon));
    (void)ignored;
    _exit(daemon > 0 ? 0 : 1);
  }
  close(fds[1]);
  pid_t daemon = -1;
  ssize_t n = middle > 0 ? read(fds[0], &daemon, sizeof(daemon)) : -1;
  close(fds[0]);
  if (middle > 0) waitpid(middle, nullptr, 0);
  JsonWriter j;
  j.BeginObject().Field("command", "daemon").Field("parent_pid", static_cast<long long>(getpid()));
  j.Field("daemon_pid", static_cast<long long>(n == sizeof(daemon) ? daemon : -1)).EndObject();
  return PrintJson(j) ? 0 : 1;
}

int CmdIgnoreTerm(const Args& args) {
  long long seconds;
  if (args.size() != 1 || !ParseNumber(args[0], &seconds)) {
    return UsageError("ignore-term SECONDS");
  }
  signal(SIGTERM, SIG_IGN);
  JsonWriter j;
  j.BeginObject().Field("command", "ignore-term").Field("ignoring", "SIGTERM").EndObject();
  PrintJson(j);
  SleepSeconds(static_cast<double>(seconds));
  return 0;
}

}  // namespace corral::probe
