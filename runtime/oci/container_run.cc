#include "runtime/oci/container_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/files.h"
#include "base/unique_fd.h"
#include "runtime/oci/oci_bundle.h"
#include "runtime/oci/oci_runtime.h"
#include "runtime/run/output_capture.h"
#include "runtime/run/planner.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/run/signal_guard.h"
#include "runtime/sandboxes/init_program.h"
#include "runtime/spec/config.h"

namespace corral::runtime::oci {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_counter{0};

// argv prepared before fork: the children only exec it.
struct Argv {
  explicit Argv(std::vector<std::string> args) : storage(std::move(args)) {
    for (auto& a : storage) pointers.push_back(a.data());
    pointers.push_back(nullptr);
  }
  std::vector<std::string> storage;
  std::vector<char*> pointers;
};

// Child side, after fork: stdio, the init's report pipe as fd 3 when there is one (`run
// --preserve-fds 1` hands it to the container), the private mount namespace crun needs
// here, signals back to their defaults (corral's SignalGuard blocks some), exec.
// Async-signal-safe.
[[noreturn]] void ExecRuntime(const OciRuntime& rt, const Argv& argv, int in, int out, int err,
                              int init_report = -1) {
  if ((in != 0 && ::dup2(in, 0) < 0) || (out != 1 && ::dup2(out, 1) < 0) ||
      (err != 2 && ::dup2(err, 2) < 0)) {
    ::_exit(126);
  }
  if (init_report >= 0) {
    // dup2 onto itself would keep O_CLOEXEC; stdio (0-2) is already in place, so fd 3 is
    // free to take.
    if (init_report < kContainerReportFd) ::_exit(126);
    if (init_report == kContainerReportFd ? ::fcntl(init_report, F_SETFD, 0) != 0
                                          : ::dup2(init_report, kContainerReportFd) < 0) {
      ::_exit(126);
    }
  }
  if (rt.hide_unified_cgroup && HideUnifiedCgroup() != 0) {
    static const char kMsg[] = "corral: could not hide /sys/fs/cgroup/unified from crun\n";
    (void)!::write(2, kMsg, sizeof kMsg - 1);
    ::_exit(126);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execv(argv.pointers[0], argv.pointers.data());
  ::_exit(127);
}

// One short runtime command (kill, delete): its exit status; its stderr into *err_text.
int RuntimeCommand(const OciRuntime& rt, const std::vector<std::string>& args,
                   std::string* err_text = nullptr) {
  Argv argv(RuntimeArgv(rt, args));
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  UniqueFd r(pipefd[0]), w(pipefd[1]);
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) ExecRuntime(rt, argv, devnull.get(), devnull.get(), w.get());
  w.Reset();
  char buf[4096];
  ssize_t n;
  while ((n = ::read(r.get(), buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (err_text != nullptr && err_text->size() < 65536) err_text->append(buf, n);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What the keeper tells corral: one record, 8 bytes.
enum KeeperKind : int32_t {
  kExited = 0,         // value: the container init's wait status
  kRuntimeFailed = 1,  // value: the runtime's own wait status (`run` failed)
  kKeeperFailed = 2,   // value: an errno
};
struct KeeperRecord {
  int32_t kind;
  int32_t value;
};

void Report(int fd, int32_t kind, int32_t value) {
  KeeperRecord rec{kind, value};
  (void)!::write(fd, &rec, sizeof rec);
}

// The keeper (a forked child; async-signal-safe only, corral may have threads).
[[noreturn]] void Keeper(const OciRuntime& rt, const Argv& run, const char* pid_file,
                         int in, int out, int err, int init_report, int report) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    Report(report, kKeeperFailed, errno);
    ::_exit(0);
  }
  pid_t runtime = ::fork();
  if (runtime < 0) {
    Report(report, kKeeperFailed, errno);
    ::_exit(0);
  }
  if (runtime == 0) ExecRuntime(rt, run, in, out, err, init_report);
  // The command's stdio and the init's report pipe are the container's now: hold no copy
  // (EOF must mean it is done).
  ::close(out);
  ::close(err);
  ::close(init_report);
  int status = 0;
  while (::waitpid(runtime, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Report(report, kRuntimeFailed, status);
    ::_exit(0);
  }
  char buf[32] = {};
  int fd = ::open(pid_file, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? ::read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) ::close(fd);
  pid_t pid = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) pid = pid * 10 + (buf[i] - '0');
  if (pid <= 0) {
    Report(report, kKeeperFailed, ESRCH);
    ::_exit(0);
  }
  // The init is ours now (re-parented: we are the nearest subreaper); anything else that
  // lands here (a runtime helper) is reaped on the way.
  for (;;) {
    pid_t w = ::waitpid(-1, &status, 0);
    if (w == pid) {
      Report(report, kExited, status);
      ::_exit(0);
    }
    if (w < 0 && errno != EINTR) {
      Report(report, kKeeperFailed, errno);
      ::_exit(0);
    }
  }
}

std::string CgroupsPathFor(const JailSpec& spec, const std::string& id) {
  std::string parent = spec.cgroups.parent;
  while (!parent.empty() && parent[0] == '/') parent.erase(0, 1);
  return "/" + parent + "/" + id;
}

std::optional<int64_t> ReadKey(const std::string& file, const std::string& key) {
  auto text = ReadFile(file);
  if (!text) return std::nullopt;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(pos, end - pos);
    if (line.rfind(key + " ", 0) == 0) return std::atoll(line.c_str() + key.size() + 1);
    pos = end + 1;
  }
  return std::nullopt;
}

std::optional<int64_t> ReadOne(const std::string& file) {
  auto v = ReadInt(file);
  if (!v) return std::nullopt;
  return static_cast<int64_t>(*v);
}

struct ContainerStats {
  int64_t oom_kills = 0;
  bool pids_limit_hit = false;
  std::optional<int64_t> memory_peak;
  std::optional<double> cpu_user_ms, cpu_system_ms;
};

// The figures of the container's cgroup, v1 (per-controller hierarchies) or v2.
ContainerStats ReadContainerStats(const std::string& cg) {
  ContainerStats s;
  const std::string v1 = "/sys/fs/cgroup/memory" + cg;
  if (::access(v1.c_str(), F_OK) == 0) {
    s.oom_kills = ReadKey(v1 + "/memory.oom_control", "oom_kill").value_or(0);
    s.memory_peak = ReadOne(v1 + "/memory.max_usage_in_bytes");
    const std::string acct = "/sys/fs/cgroup/cpuacct" + cg;
    if (auto u = ReadOne(acct + "/cpuacct.usage_user")) s.cpu_user_ms = *u / 1e6;
    if (auto u = ReadOne(acct + "/cpuacct.usage_sys")) s.cpu_system_ms = *u / 1e6;
    s.pids_limit_hit = ReadKey("/sys/fs/cgroup/pids" + cg + "/pids.events", "max").value_or(0) > 0;
    return s;
  }
  const std::string v2 = "/sys/fs/cgroup" + cg;
  s.oom_kills = ReadKey(v2 + "/memory.events", "oom_kill").value_or(0);
  s.memory_peak = ReadOne(v2 + "/memory.peak");
  if (auto u = ReadKey(v2 + "/cpu.stat", "user_usec")) s.cpu_user_ms = *u / 1e3;
  if (auto u = ReadKey(v2 + "/cpu.stat", "system_usec")) s.cpu_system_ms = *u / 1e3;
  s.pids_limit_hit = ReadKey(v2 + "/pids.events", "max").value_or(0) > 0;
  return s;
}

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Reads what is there on one output pipe; false at EOF/error.
bool DrainOnce(UniqueFd& fd, OutputCapture& capture) {
  char buf[65536];
  ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    fd.Reset();
    return false;
  }
  capture.Append(buf, static_cast<size_t>(n));
  return true;
}

// One container run's resources, released in order whatever happens: the container
// (delete -f), cgroup directories the runtime left, the bundle directory.
class ContainerCleanup {
 public:
  ContainerCleanup(OciRuntime rt, std::string id, std::string bundle, std::string cgroups_path)
      : rt_(std::move(rt)), id_(std::move(id)), bundle_(std::move(bundle)),
        cgroups_path_(std::move(cgroups_path)) {}
  ~ContainerCleanup() { Run(); }

  void Run() {
    if (done_) return;
    done_ = true;
    RuntimeCommand(rt_, {"delete", "-f", id_});
    // The runtime removes its cgroup on delete; a directory it left (an empty one in a
    // hierarchy it does not manage, or after a failed start) goes here. rmdir only: a
    // non-empty cgroup is never forced.
    for (const std::string& dir : CgroupDirsOf(cgroups_path_)) ::rmdir(dir.c_str());
    std::error_code ec;
    fs::remove_all(bundle_, ec);
  }

 private:
  OciRuntime rt_;
  std::string id_, bundle_, cgroups_path_;
  bool done_ = false;
};

void FillStatus(const LimitsSpec& limits, int wait_status, bool timed_out,
                const ContainerStats& stats, RunOutcome* o) {
  if (WIFEXITED(wait_status)) {
    o->status = RunStatus::kExited;
    o->exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    o->status = RunStatus::kSignaled;
    o->signal = WTERMSIG(wait_status);
  }
  const double cpu_ms = o->cpu_user_ms + o->cpu_system_ms;
  if (timed_out) {
    o->status = RunStatus::kTimedOut;
    o->limit = LimitKind::kWallTime;
  } else if (stats.oom_kills > 0 && o->status == RunStatus::kSignaled) {
    o->status = RunStatus::kOomKilled;
    o->limit = LimitKind::kMemory;
  } else if (o->signal == SIGXCPU || (o->signal == SIGKILL && limits.cpu_time_seconds &&
                                      cpu_ms >= *limits.cpu_time_seconds * 1000.0)) {
    o->limit = LimitKind::kCpuTime;
  } else if (o->signal == SIGXFSZ) {
    o->limit = LimitKind::kFileSize;
  } else if (stats.oom_kills > 0) {
    o->limit = LimitKind::kMemory;
  } else if (stats.pids_limit_hit) {
    o->limit = LimitKind::kPids;
  } else if (o->stdout_stream.dropped_bytes > 0 || o->stderr_stream.dropped_bytes > 0) {
    o->limit = LimitKind::kOutput;
  }
}

// The runtime refused to start the container: its message as the setup error. A command
// that is not there is ENOENT at execve, as in process mode (exit code 127).
void FillStartFailure(const OciRuntime& rt, int runtime_status, RunOutcome* o) {
  std::string text = Trim(o->stderr_stream.text);
  o->status = RunStatus::kSetupFailed;
  // EPROTO when the runtime's message names no errno we recognise (SetupFailure prints
  // strerror of it; 0 would read "Success").
  int err = EPROTO;
  jail::SetupStep step = jail::SetupStep::kInit;
  if (text.find("executable file not found") != std::string::npos ||
      text.find("No such file or directory") != std::string::npos) {
    step = jail::SetupStep::kExecve;
    err = ENOENT;
  } else if (text.find("ermission denied") != std::string::npos) {
    step = jail::SetupStep::kExecve;
    err = EACCES;
  }
  o->setup_error = jail::SetupFailure{
      step, err,
      rt.name + " run (exit " +
          std::to_string(WIFEXITED(runtime_status) ? WEXITSTATUS(runtime_status) : -1) +
          "): " + (text.empty() ? "its message went to stderr (above); --json captures it" : text)};
}

// What corral-init reports on its report fd (jail/init/corral_init.c): the command's wait
// status, or the errno of its failed exec (which comes first when there is one).
enum InitReportKind : int32_t { kInitWaitStatus = 0, kInitExecErrno = 1 };
struct InitReport {
  int32_t kind;
  int32_t value;
};

std::optional<InitReport> ReadInitReport(int fd) {
  InitReport r{};
  ssize_t n;
  do {
    n = ::read(fd, &r, sizeof r);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof r)) return std::nullopt;
  return r;
}

// The command could not be executed: as process mode reports a failed execve (exit code
// 127 for a missing file, 126 otherwise, via the setup error).
void FillExecFailure(const std::string& argv0, int err, RunOutcome* o) {
  o->status = RunStatus::kSetupFailed;
  o->setup_error = jail::SetupFailure{jail::SetupStep::kExecve, err, "execve " + argv0};
}

}  // namespace

std::vector<std::string> CgroupDirsOf(const std::string& cgroups_path) {
  std::vector<std::string> out;
  DIR* dir = ::opendir("/sys/fs/cgroup");
  if (dir == nullptr) return out;
  bool v2_root = ::access(("/sys/fs/cgroup" + cgroups_path).c_str(), F_OK) == 0;
  if (v2_root) out.push_back("/sys/fs/cgroup" + cgroups_path);
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = "/sys/fs/cgroup/" + name + cgroups_path;
    struct stat st;
    if (::lstat(("/sys/fs/cgroup/" + name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (::access(path.c_str(), F_OK) == 0) out.push_back(path);
  }
  ::closedir(dir);
  return out;
}

Result<RunOutcome> RunContainer(const JailSpec& spec, const RunOptions& options) {
  RETURN_IF_ERROR(ValidateSpec(spec));
  RETURN_IF_ERROR(CheckContainerSpec(spec));
  if (options.tty) {
    return Error(ErrorCode::kUnsupported, "mode container: -t (a terminal) is not supported");
  }
  ASSIGN_OR_RETURN(OciRuntime rt, FindOciRuntime(spec.oci_runtime));
  auto init = FindInitProgram();
  if (!init) {
    return Error(ErrorCode::kNotFound,
                 "mode container: the container's init: " + init.error().message());
  }
  RETURN_IF_ERROR(PrepareHostDirs(spec));

  const std::string id =
      "corral-" + std::to_string(::getpid()) + "-" + std::to_string(g_counter.fetch_add(1));
  const std::string oci_dir = RuntimeDir() + "/oci";
  std::error_code ec;
  fs::create_directories(oci_dir, ec);
  if (ec) return Error(ErrorCode::kIo, "mkdir " + oci_dir + ": " + ec.message());
  const std::string bundle = oci_dir + "/" + id;
  if (::mkdir(bundle.c_str(), 0700) != 0) return Error::FromErrno(errno, "mkdir " + bundle);
  const std::string cgroups_path = CgroupsPathFor(spec, id);
  ContainerCleanup cleanup(rt, id, bundle, cgroups_path);
  RETURN_IF_ERROR(WriteBundle(spec, bundle, cgroups_path, init->path));

  // The command's stdio.
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  UniqueFd out_r, out_w, err_r, err_w;
  if (options.capture_output) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
    out_r.Reset(p[0]);
    out_w.Reset(p[1]);
    if (::pipe2(p, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
    err_r.Reset(p[0]);
    err_w.Reset(p[1]);
  }
  const int in_fd = options.pass_stdin ? options.stdin_fd : devnull.get();
  const int cmd_out = options.capture_output ? out_w.get() : options.stdout_fd;
  const int cmd_err = options.capture_output ? err_w.get() : options.stderr_fd;
  int rp[2];
  if (::pipe2(rp, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd report_r(rp[0]), report_w(rp[1]);
  // corral-init's report of the command's end (InitReport below), from inside the container.
  if (::pipe2(rp, O_CLOEXEC | O_NONBLOCK) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd init_report_r(rp[0]), init_report_w(rp[1]);

  std::unique_ptr<SignalGuard> guard;
  if (options.interrupt_fd < 0) guard = std::make_unique<SignalGuard>();
  const int stop_fd = options.interrupt_fd >= 0 ? options.interrupt_fd : guard->fd();

  const std::string pid_file = bundle + "/container.pid";
  Argv run(RuntimeArgv(rt, {"run", "--detach", "--preserve-fds", "1", "--pid-file", pid_file,
                            "--bundle", bundle, id}));
  const auto start = Clock::now();
  pid_t keeper = ::fork();
  if (keeper < 0) return Error::FromErrno(errno, "fork");
  if (keeper == 0) {
    // The keeper's own copies of the read ends would not hurt, but the output it must
    // not hold is closed inside Keeper once the runtime has it.
    Keeper(rt, run, pid_file.c_str(), in_fd, cmd_out, cmd_err, init_report_w.get(),
           report_w.get());
  }
  out_w.Reset();
  err_w.Reset();
  report_w.Reset();
  init_report_w.Reset();

  RunOutcome outcome;
  outcome.oci_runtime = rt.name;
  outcome.captured = options.capture_output;
  outcome.landlock = LandlockOutcome{false, 0, false,
                                     "mode container: the OCI runtime applies no Landlock"};
  outcome.warnings = WeakenedIsolation(spec);
  OutputCapture out(spec.limits.output_limit_bytes), err(spec.limits.output_limit_bytes);

  const double timeout_ms = spec.limits.timeout_seconds * 1000.0;
  const std::vector<std::string> kill_all =
      spec.namespaces.pid ? std::vector<std::string>{"kill"} : std::vector<std::string>{"kill", "--all"};
  auto kill_args = [&](const char* sig) {
    std::vector<std::string> a = kill_all;
    a.push_back(id);
    a.push_back(sig);
    return a;
  };
  bool timed_out = false;
  const char* pending_kill = nullptr;  // a signal asked for, not yet delivered
  bool term_sent = false;
  Clock::time_point term_sent_at{};
  std::optional<KeeperRecord> record;
  KeeperRecord partial{};
  size_t partial_bytes = 0;

  while (!record) {
    double waited = MsSince(start);
    int poll_ms = 100;
    if (timeout_ms > 0 && !timed_out) {
      poll_ms = static_cast<int>(std::min<double>(std::max<double>(timeout_ms - waited, 0), 1000));
    }
    pollfd fds[4];
    int n = 0;
    fds[n++] = {report_r.get(), POLLIN, 0};
    fds[n++] = {stop_fd, POLLIN, 0};
    const int out_i = out_r.valid() ? n : -1;
    if (out_r.valid()) fds[n++] = {out_r.get(), POLLIN, 0};
    const int err_i = err_r.valid() ? n : -1;
    if (err_r.valid()) fds[n++] = {err_r.get(), POLLIN, 0};
    int ready = ::poll(fds, n, poll_ms);
    if (ready < 0 && errno != EINTR) return Error::FromErrno(errno, "poll");
    if (ready > 0) {
      if (out_i >= 0 && (fds[out_i].revents & (POLLIN | POLLHUP))) DrainOnce(out_r, out);
      if (err_i >= 0 && (fds[err_i].revents & (POLLIN | POLLHUP))) DrainOnce(err_r, err);
      if (fds[1].revents & (POLLIN | POLLHUP)) {
        int sig = SIGHUP;
        if (options.interrupt_fd >= 0) {
          unsigned char b = 0;
          if (::read(stop_fd, &b, 1) == 1) sig = b;
        } else {
          signalfd_siginfo si{};
          if (::read(stop_fd, &si, sizeof si) == sizeof si) sig = static_cast<int>(si.ssi_signo);
        }
        if (!outcome.interrupted_by) outcome.interrupted_by = sig;
        pending_kill = "KILL";
      }
      if (fds[0].revents & (POLLIN | POLLHUP)) {
        ssize_t got = ::read(report_r.get(), reinterpret_cast<char*>(&partial) + partial_bytes,
                             sizeof partial - partial_bytes);
        if (got > 0) partial_bytes += static_cast<size_t>(got);
        if (partial_bytes == sizeof partial) {
          record = partial;
        } else if (got == 0) {
          record = KeeperRecord{kKeeperFailed, EPIPE};  // the keeper died without a word
        }
      }
    }
    if (record) break;
    if (timeout_ms > 0 && !timed_out && MsSince(start) >= timeout_ms) {
      timed_out = true;
      pending_kill = "TERM";
      term_sent = false;
    }
    if (timed_out && term_sent && pending_kill == nullptr &&
        std::chrono::duration<double>(Clock::now() - term_sent_at).count() >=
            spec.limits.kill_grace_seconds) {
      pending_kill = "KILL";
    }
    if (pending_kill != nullptr) {
      // Fails while the runtime is still creating the container: tried again next round.
      if (RuntimeCommand(rt, kill_args(pending_kill)) == 0) {
        if (std::strcmp(pending_kill, "TERM") == 0) {
          term_sent = true;
          term_sent_at = Clock::now();
        }
        pending_kill = nullptr;
      }
    }
  }
  outcome.wall_ms = MsSince(start);

  // The output's last bytes: the init is gone, and with it (PID namespace) everything in
  // the container; without one, stragglers are killed through the runtime first.
  if (!spec.namespaces.pid && record->kind == kExited) RuntimeCommand(rt, kill_args("KILL"));
  const auto drain_until = Clock::now() + std::chrono::seconds(2);
  while ((out_r.valid() || err_r.valid()) && Clock::now() < drain_until) {
    pollfd fds[2];
    int n = 0;
    if (out_r.valid()) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_r.valid()) fds[n++] = {err_r.get(), POLLIN, 0};
    if (::poll(fds, n, 100) <= 0) continue;
    if (out_r.valid() && (fds[0].revents & (POLLIN | POLLHUP))) DrainOnce(out_r, out);
    int ei = out_r.valid() ? 1 : 0;
    if (err_r.valid() && ei < n && (fds[ei].revents & (POLLIN | POLLHUP))) DrainOnce(err_r, err);
  }
  outcome.stdout_stream = out.Finish();
  outcome.stderr_stream = err.Finish();

  ContainerStats stats = ReadContainerStats(cgroups_path);
  cleanup.Run();
  int keeper_status = 0;
  while (::waitpid(keeper, &keeper_status, 0) < 0 && errno == EINTR) {
  }

  outcome.memory_peak_bytes = stats.memory_peak;
  outcome.cpu_user_ms = stats.cpu_user_ms.value_or(0);
  outcome.cpu_system_ms = stats.cpu_system_ms.value_or(0);
  switch (record->kind) {
    case kExited:
      // The init is gone, so what it reported is in the pipe. Without a report (the init
      // itself was killed: the SIGKILL after the grace, which ended the command with it)
      // the init's own status is the command's.
      if (std::optional<InitReport> r = ReadInitReport(init_report_r.get());
          r && r->kind == kInitExecErrno) {
        FillExecFailure(spec.argv.empty() ? std::string() : spec.argv[0], r->value, &outcome);
      } else {
        FillStatus(spec.limits, r ? r->value : record->value, timed_out, stats, &outcome);
      }
      break;
    case kRuntimeFailed:
      FillStartFailure(rt, record->value, &outcome);
      if (timed_out) {
        outcome.status = RunStatus::kTimedOut;
        outcome.limit = LimitKind::kWallTime;
      }
      break;
    default:
      return Error(ErrorCode::kSetupFailed,
                   "mode container: corral's keeper of " + rt.name + " failed: " +
                       std::strerror(record->value));
  }
  return outcome;
}

}  // namespace corral::runtime::oci
