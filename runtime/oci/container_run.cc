#include "runtime/oci/container_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/fd_pair.h"
#include "base/files.h"
#include "base/unique_fd.h"
#include "runtime/oci/oci_bundle.h"
#include "runtime/oci/oci_runtime.h"
#include "runtime/oci/runtime_process.h"
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
      : rt_(std::move(rt)),
        id_(std::move(id)),
        bundle_(std::move(bundle)),
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

// Where one container run lives on the host.
struct ContainerPlace {
  std::string id;            // "corral-<pid>-<n>"
  std::string bundle;        // <runtime dir>/oci/<id>
  std::string cgroups_path;  // /<cgroups.parent>/<id>
};

// A fresh id and its empty bundle directory.
Result<ContainerPlace> MakeContainerPlace(const JailSpec& spec) {
  ContainerPlace place;
  place.id = "corral-" + std::to_string(::getpid()) + "-" + std::to_string(g_counter.fetch_add(1));
  const std::string oci_dir = RuntimeDir() + "/oci";
  std::error_code ec;
  fs::create_directories(oci_dir, ec);
  if (ec) return Error(ErrorCode::kIo, "mkdir " + oci_dir + ": " + ec.message());
  place.bundle = oci_dir + "/" + place.id;
  if (::mkdir(place.bundle.c_str(), 0700) != 0) {
    return Error::FromErrno(errno, "mkdir " + place.bundle);
  }
  place.cgroups_path = CgroupsPathFor(spec, place.id);
  return place;
}

// The descriptors of one run, all owned here: the command's output pipes (when it is
// captured), the keeper's record and corral-init's report.
struct ContainerPipes {
  UniqueFd devnull;
  std::optional<Pipe> out, err;  // capture_output only
  Pipe keeper_report;            // one KeeperRecord
  Pipe init_report;              // corral-init's InitReport, from inside the container
  KeeperFds KeeperSide(const RunOptions& options) const {
    return {options.pass_stdin ? options.stdin_fd : devnull.get(),
            out ? out->write.get() : options.stdout_fd, err ? err->write.get() : options.stderr_fd,
            init_report.write.get(), keeper_report.write.get()};
  }
  // Once the keeper has its copies: EOF on a read end must mean the writer is done.
  void CloseKeeperSide() {
    if (out) out->write.Reset();
    if (err) err->write.Reset();
    keeper_report.write.Reset();
    init_report.write.Reset();
  }
};

Result<ContainerPipes> MakeContainerPipes(const RunOptions& options) {
  ContainerPipes p;
  p.devnull.Reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (options.capture_output) {
    ASSIGN_OR_RETURN(p.out, MakePipe());
    ASSIGN_OR_RETURN(p.err, MakePipe());
  }
  ASSIGN_OR_RETURN(p.keeper_report, MakePipe());
  // Read once the init is gone, whether or not it wrote: never block on it.
  ASSIGN_OR_RETURN(p.init_report, MakePipe(O_CLOEXEC | O_NONBLOCK));
  return p;
}

// Step 3 of container_run.h: from the keeper's start to its record, drains the output
// under the caps and turns the wall clock and corral's stop signals into runtime kills.
class ContainerWatch {
 public:
  ContainerWatch(const OciRuntime& rt, const JailSpec& spec, const std::string& id, int stop_fd,
                 bool stop_fd_is_interrupt_pipe)
      : rt_(rt),
        limits_(spec.limits),
        id_(id),
        pid_namespace_(spec.namespaces.pid),
        stop_fd_(stop_fd),
        stop_fd_is_interrupt_pipe_(stop_fd_is_interrupt_pipe) {}

  Result<KeeperRecord> Run(ContainerPipes& pipes, OutputCapture& out, OutputCapture& err) {
    UniqueFd* out_r = pipes.out ? &pipes.out->read : nullptr;
    UniqueFd* err_r = pipes.err ? &pipes.err->read : nullptr;
    while (!record_) {
      pollfd fds[4];
      int n = 0;
      fds[n++] = {pipes.keeper_report.read.get(), POLLIN, 0};
      fds[n++] = {stop_fd_, POLLIN, 0};
      const int out_i = out_r && out_r->valid() ? n : -1;
      if (out_i >= 0) fds[n++] = {out_r->get(), POLLIN, 0};
      const int err_i = err_r && err_r->valid() ? n : -1;
      if (err_i >= 0) fds[n++] = {err_r->get(), POLLIN, 0};
      int ready = ::poll(fds, n, PollMs());
      if (ready < 0 && errno != EINTR) return Error::FromErrno(errno, "poll");
      if (ready > 0) {
        if (out_i >= 0 && (fds[out_i].revents & (POLLIN | POLLHUP))) DrainOnce(*out_r, out);
        if (err_i >= 0 && (fds[err_i].revents & (POLLIN | POLLHUP))) DrainOnce(*err_r, err);
        if (fds[1].revents & (POLLIN | POLLHUP)) OnStopSignal();
        if (fds[0].revents & (POLLIN | POLLHUP)) ReadRecord(pipes.keeper_report.read.get());
      }
      if (record_) break;
      AdvanceClock();
      SendPendingKill();
    }
    return *record_;
  }

  // The runtime's kill command for the whole container (`--all` without a PID namespace,
  // where the init's end does not end the rest).
  std::vector<std::string> KillArgs(const char* sig) const {
    std::vector<std::string> a{"kill"};
    if (!pid_namespace_) a.push_back("--all");
    a.push_back(id_);
    a.push_back(sig);
    return a;
  }

  bool timed_out() const { return timed_out_; }
  std::optional<int> interrupted_by() const { return interrupted_by_; }
  double wall_ms() const { return MsSince(start_); }

 private:
  double TimeoutMs() const { return limits_.timeout_seconds * 1000.0; }

  int PollMs() const {
    if (TimeoutMs() <= 0 || timed_out_) return 100;
    return static_cast<int>(std::min<double>(std::max<double>(TimeoutMs() - wall_ms(), 0), 1000));
  }

  // SIGINT/SIGTERM/SIGHUP to corral (or a byte on the caller's interrupt pipe): kill now.
  void OnStopSignal() {
    int sig = SIGHUP;
    if (stop_fd_is_interrupt_pipe_) {
      unsigned char b = 0;
      if (::read(stop_fd_, &b, 1) == 1) sig = b;
    } else {
      signalfd_siginfo si{};
      if (::read(stop_fd_, &si, sizeof si) == sizeof si) sig = static_cast<int>(si.ssi_signo);
    }
    if (!interrupted_by_) interrupted_by_ = sig;
    pending_kill_ = "KILL";
  }

  void ReadRecord(int fd) {
    ssize_t got = ::read(fd, reinterpret_cast<char*>(&partial_) + partial_bytes_,
                         sizeof partial_ - partial_bytes_);
    if (got > 0) partial_bytes_ += static_cast<size_t>(got);
    if (partial_bytes_ == sizeof partial_) {
      record_ = partial_;
    } else if (got == 0) {
      record_ = KeeperRecord{kKeeperFailed, EPIPE};  // the keeper died without a word
    }
  }

  // The wall clock: TERM at the timeout, KILL once limits.kill_grace_seconds have passed
  // since the TERM was delivered.
  void AdvanceClock() {
    if (TimeoutMs() > 0 && !timed_out_ && wall_ms() >= TimeoutMs()) {
      timed_out_ = true;
      pending_kill_ = "TERM";
      term_sent_ = false;
    }
    if (timed_out_ && term_sent_ && pending_kill_ == nullptr &&
        std::chrono::duration<double>(Clock::now() - term_sent_at_).count() >=
            limits_.kill_grace_seconds) {
      pending_kill_ = "KILL";
    }
  }

  void SendPendingKill() {
    if (pending_kill_ == nullptr) return;
    // Fails while the runtime is still creating the container: tried again next round.
    if (RuntimeCommand(rt_, KillArgs(pending_kill_)) != 0) return;
    if (std::strcmp(pending_kill_, "TERM") == 0) {
      term_sent_ = true;
      term_sent_at_ = Clock::now();
    }
    pending_kill_ = nullptr;
  }

  const OciRuntime& rt_;
  const LimitsSpec& limits_;
  const std::string& id_;
  const bool pid_namespace_;
  const int stop_fd_;
  const bool stop_fd_is_interrupt_pipe_;
  const Clock::time_point start_ = Clock::now();

  bool timed_out_ = false;
  const char* pending_kill_ = nullptr;  // a signal asked for, not yet delivered
  bool term_sent_ = false;
  Clock::time_point term_sent_at_{};
  std::optional<int> interrupted_by_;
  std::optional<KeeperRecord> record_;
  KeeperRecord partial_{};
  size_t partial_bytes_ = 0;
};

// The output's last bytes once the keeper has reported (at most 2 s).
void DrainRest(ContainerPipes& pipes, OutputCapture& out, OutputCapture& err) {
  const auto until = Clock::now() + std::chrono::seconds(2);
  for (auto [pipe, capture] : {std::pair{&pipes.out, &out}, std::pair{&pipes.err, &err}}) {
    while (*pipe && (*pipe)->read.valid() && Clock::now() < until) {
      pollfd p{(*pipe)->read.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      DrainOnce((*pipe)->read, *capture);
    }
  }
}

// The outcome from the keeper's record, corral-init's report and the cgroup's figures.
Result<RunOutcome> FinishOutcome(const JailSpec& spec, const OciRuntime& rt,
                                 const KeeperRecord& record, bool timed_out,
                                 const ContainerStats& stats, int init_report, RunOutcome outcome) {
  outcome.memory_peak_bytes = stats.memory_peak;
  outcome.cpu_user_ms = stats.cpu_user_ms.value_or(0);
  outcome.cpu_system_ms = stats.cpu_system_ms.value_or(0);
  switch (record.kind) {
    case kExited:
      // The init is gone, so what it reported is in the pipe. Without a report (the init
      // itself was killed: the SIGKILL after the grace, which ended the command with it)
      // the init's own status is the command's.
      if (std::optional<InitReport> r = ReadInitReport(init_report);
          r && r->kind == kInitExecErrno) {
        FillExecFailure(spec.argv.empty() ? std::string() : spec.argv[0], r->value, &outcome);
      } else {
        ClassifyEnd(r ? r->value : record.value,
                    EndEvidence{timed_out, stats.oom_kills, stats.pids_limit_hit,
                                spec.limits.cpu_time_seconds},
                    &outcome);
      }
      return outcome;
    case kRuntimeFailed:
      FillStartFailure(rt, record.value, &outcome);
      if (timed_out) {
        outcome.status = RunStatus::kTimedOut;
        outcome.limit = LimitKind::kWallTime;
      }
      return outcome;
    default:
      return Error(ErrorCode::kSetupFailed, "mode container: corral's keeper of " + rt.name +
                                                " failed: " + std::strerror(record.value));
  }
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

  // Step 1: the bundle, removed with the container on every path from here on.
  ASSIGN_OR_RETURN(ContainerPlace place, MakeContainerPlace(spec));
  ContainerCleanup cleanup(rt, place.id, place.bundle, place.cgroups_path);
  RETURN_IF_ERROR(WriteBundle(spec, place.bundle, place.cgroups_path, init->path));
  ASSIGN_OR_RETURN(ContainerPipes pipes, MakeContainerPipes(options));
  std::unique_ptr<SignalGuard> guard;
  if (options.interrupt_fd < 0) guard = std::make_unique<SignalGuard>();
  const int stop_fd = options.interrupt_fd >= 0 ? options.interrupt_fd : guard->fd();

  // Step 2: the keeper starts the container.
  const std::string pid_file = place.bundle + "/container.pid";
  Argv run(RuntimeArgv(rt, {"run", "--detach", "--preserve-fds", "1", "--pid-file", pid_file,
                            "--bundle", place.bundle, place.id}));
  ContainerWatch watch(rt, spec, place.id, stop_fd, options.interrupt_fd >= 0);
  pid_t keeper = ::fork();
  if (keeper < 0) return Error::FromErrno(errno, "fork");
  if (keeper == 0) Keeper(rt, run, pid_file.c_str(), pipes.KeeperSide(options));
  pipes.CloseKeeperSide();

  // Step 3: watch it to its end.
  RunOutcome outcome;
  outcome.oci_runtime = rt.name;
  outcome.captured = options.capture_output;
  outcome.landlock =
      LandlockOutcome{false, 0, false, "mode container: the OCI runtime applies no Landlock"};
  outcome.warnings = WeakenedIsolation(spec);
  OutputCapture out(spec.limits.output_limit_bytes), err(spec.limits.output_limit_bytes);
  ASSIGN_OR_RETURN(KeeperRecord record, watch.Run(pipes, out, err));
  outcome.wall_ms = watch.wall_ms();
  outcome.interrupted_by = watch.interrupted_by();
  // The init is gone, and with it (PID namespace) everything in the container; without
  // one, stragglers are killed through the runtime before the output's last bytes.
  if (!spec.namespaces.pid && record.kind == kExited) RuntimeCommand(rt, watch.KillArgs("KILL"));
  DrainRest(pipes, out, err);
  outcome.stdout_stream = out.Finish();
  outcome.stderr_stream = err.Finish();

  // Step 4: the figures while the cgroup still exists, then everything goes.
  ContainerStats stats = ReadContainerStats(place.cgroups_path);
  cleanup.Run();
  int keeper_status = 0;
  while (::waitpid(keeper, &keeper_status, 0) < 0 && errno == EINTR) {
  }
  return FinishOutcome(spec, rt, record, watch.timed_out(), stats, pipes.init_report.read.get(),
                       std::move(outcome));
}

}  // namespace corral::runtime::oci
