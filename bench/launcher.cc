#include "bench/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "base/unique_fd.h"

extern char** environ;

namespace corral::bench {
namespace {

constexpr size_t kMaxCapture = 1 << 20;
constexpr size_t kStderrTail = 400;

std::string ReadAll(int fd, size_t cap) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < cap) out.append(buf, std::min(static_cast<size_t>(n), cap - out.size()));
  }
  return out;
}

// posix_spawn()s argv (argv[0] absolute) with the three fds as its stdin/stdout/stderr.
Result<pid_t> SpawnWithStdio(const std::vector<std::string>& argv, int in, int out, int err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_adddup2(&fa, out, 1);
  posix_spawn_file_actions_adddup2(&fa, err, 2);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Error::FromErrno(rc, "spawning " + argv[0]);
  return pid;
}

// Spawns argv; stdout goes to a pipe when `capture`, else /dev/null; stderr always to a
// pipe so a failure can say why. Both pipes are drained by one poll-free loop: stderr of
// these tools is tiny, so reading stdout first cannot deadlock on a full stderr pipe
// unless a peer prints >64 KiB of errors, which would be a failure anyway.
Result<std::string> Spawn(const std::vector<std::string>& argv, bool capture) {
  int out_pipe[2] = {-1, -1};
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  UniqueFd out_r, out_w;
  if (capture) {
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
    out_r.Reset(out_pipe[0]);
    out_w.Reset(out_pipe[1]);
  }
  UniqueFd devnull(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!devnull) return Error::FromErrno(errno, "open /dev/null");

  ASSIGN_OR_RETURN(pid_t pid, SpawnWithStdio(argv, devnull.get(),
                                             capture ? out_w.get() : devnull.get(), err_w.get()));
  err_w.Reset();
  out_w.Reset();
  std::string out = capture ? ReadAll(out_r.get(), kMaxCapture) : "";
  std::string err = ReadAll(err_r.get(), 64 * 1024);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return out;
  if (err.size() > kStderrTail) err = "..." + err.substr(err.size() - kStderrTail);
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status));
  return Error(ErrorCode::kIo, argv[0] + ": " + how + (err.empty() ? "" : ": " + err));
}

}  // namespace

Status SpawnAndWait(const std::vector<std::string>& argv) {
  auto r = Spawn(argv, false);
  if (!r) return r.error();
  return Ok();
}

Result<std::string> SpawnAndCapture(const std::vector<std::string>& argv) {
  return Spawn(argv, true);
}

Result<pid_t> SpawnBackground(const std::vector<std::string>& argv, const std::string& log_path) {
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd log(open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!devnull || !log) return Error::FromErrno(errno, "opening " + log_path);
  return SpawnWithStdio(argv, devnull.get(), log.get(), log.get());
}

void StopBackground(pid_t pid, int grace_ms) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (int waited = 0;; waited += 10) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    if (waited >= grace_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return;
    }
    usleep(10 * 1000);
  }
}

Status WriteRegularFile(const std::string& path, const std::string& content) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return Error::FromErrno(errno, path);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno(errno, "writing " + path);
    off += static_cast<size_t>(n);
  }
  return Ok();
}

std::string CorralExe() {
  if (const char* front = std::getenv("CORRAL_FRONT_EXE"); front != nullptr && *front == '/') {
    return front;
  }
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace corral::bench
