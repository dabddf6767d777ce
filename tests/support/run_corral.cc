#include "tests/support/run_corral.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "base/unique_fd.h"
#include "tests/support/leak_check.h"

extern char** environ;

namespace corral::test {
namespace {

using Clock = std::chrono::steady_clock;

// After the program exits, its output pipes may still be held open by processes it left
// behind; we stop reading this long after its exit (the leak check then reports them).
constexpr std::chrono::milliseconds kDrainAfterExit{2000};

struct ChildFds {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int pty_slave = -1;
  int stray_fd = -1;
};

// Runs in the forked child: async-signal-safe calls only (the test may have threads).
[[noreturn]] void ExecChild(const ChildFds& fds, char* const* argv, char* const* envp) {
  if (fds.pty_slave >= 0) {
    setsid();
    ioctl(fds.pty_slave, TIOCSCTTY, 0);
  }
  if (dup2(fds.stdin_fd, 0) < 0 || dup2(fds.stdout_fd, 1) < 0 || dup2(fds.stderr_fd, 2) < 0) {
    _exit(121);
  }
  if (fds.stray_fd >= 0) {
    int root = open("/", O_RDONLY | O_DIRECTORY);  // deliberately inheritable
    if (root < 0 || (root != fds.stray_fd && dup2(root, fds.stray_fd) < 0)) _exit(122);
  }
  execve(argv[0], argv, envp);
  _exit(errno == ENOENT ? 127 : 126);
}

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Error::FromErrno(errno, "fcntl O_NONBLOCK");
  }
  return Ok();
}

// Reads what is there; false at EOF (or EIO, which is how a pty master reports that the
// last slave fd closed).
bool ReadSome(int fd, std::string* out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

struct Watch {
  pid_t pid;
  UniqueFd out, err, in;  // parent ends
  std::string stdin_data;
};

// Pumps stdin, drains stdout/stderr, reaps. Kills the child (by pid) at the deadline.
Status Supervise(Watch& w, const RunOptions& options, RunResult* result) {
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + options.timeout;
  std::optional<Clock::time_point> exited_at;
  size_t stdin_off = 0;
  int status = 0;
  while (w.out || w.err || !exited_at) {
    if (!exited_at && waitpid(w.pid, &status, WNOHANG) == w.pid) exited_at = Clock::now();
    Clock::time_point now = Clock::now();
    if (!exited_at && now >= deadline) {
      kill(w.pid, SIGKILL);
      result->timed_out = true;
      deadline = now + kDrainAfterExit;
    }
    if (exited_at && now >= *exited_at + kDrainAfterExit) break;
    struct pollfd pfds[3];
    int n = 0;
    if (w.out) pfds[n++] = {w.out.get(), POLLIN, 0};
    if (w.err) pfds[n++] = {w.err.get(), POLLIN, 0};
    if (w.in) pfds[n++] = {w.in.get(), POLLOUT, 0};
    if (poll(pfds, n, 20) < 0 && errno != EINTR) return Error::FromErrno(errno, "poll");
    if (w.out && !ReadSome(w.out.get(), &result->out)) w.out.Reset();
    if (w.err && !ReadSome(w.err.get(), &result->err)) w.err.Reset();
    if (w.in) {
      ssize_t k =
          write(w.in.get(), w.stdin_data.data() + stdin_off, w.stdin_data.size() - stdin_off);
      if (k > 0) stdin_off += static_cast<size_t>(k);
      if ((k < 0 && errno != EAGAIN && errno != EINTR) || stdin_off == w.stdin_data.size()) {
        w.in.Reset();
      }
    }
  }
  if (!exited_at && waitpid(w.pid, &status, 0) < 0) return Error::FromErrno(errno, "waitpid");
  result->wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  result->exited = WIFEXITED(status);
  result->exit_code = result->exited ? WEXITSTATUS(status) : -1;
  result->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return Ok();
}

Status MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return Error::FromErrno(errno, "pipe2");
  read_end->Reset(p[0]);
  write_end->Reset(p[1]);
  return Ok();
}

// The child's ends of its stdio, owned by the parent until the fork.
struct ChildEnds {
  UniqueFd in, out, err, pty_slave;
};

Status OpenStdio(const RunOptions& options, Watch* w, ChildEnds* ends) {
  if (options.use_pty) {
    int master, slave;
    if (openpty(&master, &slave, nullptr, nullptr, nullptr) < 0) {
      return Error::FromErrno(errno, "openpty");
    }
    w->out.Reset(master);
    ends->pty_slave.Reset(slave);
    fcntl(master, F_SETFD, FD_CLOEXEC);
    fcntl(slave, F_SETFD, FD_CLOEXEC);
    return SetNonBlocking(master);
  }
  RETURN_IF_ERROR(MakePipe(&w->out, &ends->out));
  RETURN_IF_ERROR(MakePipe(&w->err, &ends->err));
  RETURN_IF_ERROR(SetNonBlocking(w->out.get()));
  RETURN_IF_ERROR(SetNonBlocking(w->err.get()));
  if (options.stdin_data) {
    RETURN_IF_ERROR(MakePipe(&ends->in, &w->in));
    return SetNonBlocking(w->in.get());
  }
  ends->in.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!ends->in) return Error::FromErrno(errno, "open /dev/null");
  return Ok();
}

std::string Truncated(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  return s.substr(0, max) + "... [" + std::to_string(s.size() - max) + " more bytes]";
}

}  // namespace

Result<pid_t> StartProgram(const std::vector<std::string>& argv) {
  std::vector<std::string> storage = argv;
  std::vector<char*> pointers;
  for (auto& a : storage) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  pid_t pid;
  int err = posix_spawn(&pid, pointers[0], nullptr, nullptr, pointers.data(), environ);
  if (err != 0) return Error::FromErrno(err, "posix_spawn " + argv[0]);
  RecordSpawnedPid(pid);
  return pid;
}

Result<RunResult> RunProgram(const std::string& binary, const std::vector<std::string>& args,
                             const RunOptions& options) {
  RunResult result;
  result.argv.push_back(binary);
  result.argv.insert(result.argv.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : result.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings(options.env);
  for (char** e = environ; e && *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  Watch w;
  w.stdin_data = options.stdin_data.value_or("");
  ChildEnds ends;
  RETURN_IF_ERROR(OpenStdio(options, &w, &ends));
  ChildFds fds;
  fds.pty_slave = ends.pty_slave.get();
  fds.stdin_fd = options.use_pty ? ends.pty_slave.get() : ends.in.get();
  fds.stdout_fd = options.use_pty ? ends.pty_slave.get() : ends.out.get();
  fds.stderr_fd = options.use_pty ? ends.pty_slave.get() : ends.err.get();
  fds.stray_fd = options.stray_fd;

  // A dead reader must show up as EPIPE in Supervise, not kill the test binary.
  signal(SIGPIPE, SIG_IGN);
  w.pid = fork();
  if (w.pid < 0) return Error::FromErrno(errno, "fork");
  if (w.pid == 0) ExecChild(fds, argv.data(), envp.data());
  RecordSpawnedPid(w.pid);
  ends = ChildEnds();  // the child has them; our copies would hide EOF
  RETURN_IF_ERROR(Supervise(w, options, &result));
  return result;
}

std::string RunResult::Describe() const {
  std::ostringstream s;
  s << "command:";
  for (const std::string& a : argv) s << " " << a;
  s << "\nstatus: ";
  if (timed_out) s << "TIMED OUT (killed by the test), ";
  if (exited) {
    s << "exited " << exit_code;
  } else {
    s << "killed by signal " << term_signal;
  }
  s << " after " << static_cast<long>(wall_ms) << " ms";
  s << "\nstdout: " << Truncated(out, 3000) << "\nstderr: " << Truncated(err, 3000);
  return s.str();
}

std::vector<std::string> ProbeRunArgs(const std::string& probe_host_path,
                                      const std::vector<std::string>& corral_flags,
                                      const std::vector<std::string>& probe_args) {
  std::vector<std::string> args = {"run", "--json", "-v",
                                   probe_host_path + ":" + kProbeInJail + ":ro"};
  args.insert(args.end(), corral_flags.begin(), corral_flags.end());
  args.push_back("--");
  args.push_back(kProbeInJail);
  args.insert(args.end(), probe_args.begin(), probe_args.end());
  return args;
}

Result<JailRun> RunJailed(const std::string& corral_binary, const std::vector<std::string>& args,
                          const RunOptions& options) {
  ASSIGN_OR_RETURN(RunResult run, RunProgram(corral_binary, args, options));
  return ParseJailed(std::move(run));
}

std::string StripCorralWarnings(const std::string& out) {
  std::string kept;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    end = end == std::string::npos ? out.size() : end + 1;
    if (out.compare(start, 17, "corral: warning: ") != 0) kept += out.substr(start, end - start);
    start = end;
  }
  return kept;
}

Result<JailRun> ParseJailed(RunResult run) {
  JailRun jail;
  jail.outcome = nlohmann::json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  if (jail.outcome.is_discarded() || !jail.outcome.is_object()) {
    return Error(ErrorCode::kInvalidArgument,
                 "corral --json did not print one JSON object\n" + run.Describe());
  }
  jail.run = std::move(run);
  auto stdout_field = jail.outcome.find("stdout");
  if (stdout_field != jail.outcome.end() && stdout_field->is_string()) {
    jail.probe = nlohmann::json::parse(stdout_field->get<std::string>(), nullptr, false);
    if (jail.probe.is_discarded()) jail.probe = nullptr;
  }
  return jail;
}

std::string JailRun::Describe() const {
  auto field = [this](const char* key) {
    auto it = outcome.find(key);
    return it == outcome.end() ? std::string("<absent>") : it->dump();
  };
  auto it = outcome.find("stderr");
  std::string command_stderr =
      it != outcome.end() && it->is_string() ? it->get<std::string>() : field("stderr");
  std::ostringstream s;
  s << run.Describe() << "\noutcome: status=" << field("status")
    << " exit_code=" << field("exit_code") << " signal=" << field("signal")
    << " limit=" << field("limit") << " setup_error=" << field("setup_error")
    << "\ncommand stderr: " << Truncated(command_stderr, 3000);
  return s.str();
}

}  // namespace corral::test
