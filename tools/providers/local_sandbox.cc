#include "tools/providers/local_sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/fd_pair.h"
#include "base/unique_fd.h"

extern char** environ;

namespace corral::runtime {

const char* const kHostBashDisabledMessage =
    "Host bash execution is disabled for LocalSandboxProvider because it runs commands "
    "directly on the host. Set sandbox.allow_host_bash: true only in a trusted environment, "
    "or use the jail provider (sandbox.use: jail).";

namespace {

constexpr size_t kStreamCapBytes = 10 * 1024 * 1024;
constexpr const char* kAllowedMessage =
    "Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or configured mount "
    "paths are allowed";

bool HasDotDot(const std::string& path) {
  std::string p = path;
  std::replace(p.begin(), p.end(), '\\', '/');
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string::npos) slash = p.size();
    if (p.compare(start, slash - start, "..") == 0 && slash - start == 2) return true;
    start = slash + 1;
  }
  return false;
}

// DeerFlow's env_policy: secret-looking host variables are not passed to host commands.
bool SecretLookingName(const std::string& name) {
  static const char* const kParts[] = {"KEY", "SECRET", "TOKEN", "PASS", "CREDENTIAL", "DSN"};
  static const char* const kExact[] = {"DATABASE_URL", "REDIS_URL", "GH_PAT", "MYSQL_PWD"};
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* p : kParts) {
    if (upper.find(p) != std::string::npos) return true;
  }
  for (const char* e : kExact) {
    if (upper == e) return true;
  }
  return false;
}

std::vector<std::string> HostEnv(const EnvList& overlay) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    bool overridden =
        std::any_of(overlay.begin(), overlay.end(), [&](const auto& o) { return o.first == name; });
    if (!SecretLookingName(name) && !overridden) out.push_back(kv);
  }
  for (const auto& [k, v] : overlay) out.push_back(k + "=" + v);
  return out;
}

struct Captured {
  std::string data;
  size_t total = 0;
  void Add(const char* p, size_t n) {
    total += n;
    if (data.size() < kStreamCapBytes) data.append(p, std::min(n, kStreamCapBytes - data.size()));
  }
  std::string Text() const {
    if (total <= data.size()) return data;
    return data + "\n... [output truncated after " + std::to_string(data.size()) + " of " +
           std::to_string(total) + " bytes; remaining output discarded] ...";
  }
};

// Drains whatever the pipes hold right now; with `block_ms` waits that long for data.
void Drain(int out_fd, int err_fd, int block_ms, Captured* out, Captured* err) {
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  if (::poll(fds, 2, block_ms) <= 0) return;
  char buf[65536];
  Captured* dst[2] = {out, err};
  for (int i = 0; i < 2; ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
    for (;;) {
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) break;
      dst[i]->Add(buf, static_cast<size_t>(n));
    }
  }
}

struct HostRun {
  std::string out, err;
  int exit_code = 0;
  bool timed_out = false;
  double wall_ms = 0;
};

// fork+exec of the shell in its own session, stdin /dev/null. Returns when the shell
// exits (not when the pipes close: a backgrounded server keeps them open); on timeout the
// whole process group is SIGKILLed.
SbResult<HostRun> RunOnHost(const std::string& command, const EnvList& env, double timeout) {
  auto out_pipe = MakePipe(O_CLOEXEC | O_NONBLOCK);
  if (!out_pipe) return ErrorFromErrno(out_pipe.error().sys_errno(), "pipe");
  auto err_pipe = MakePipe(O_CLOEXEC | O_NONBLOCK);
  if (!err_pipe) return ErrorFromErrno(err_pipe.error().sys_errno(), "pipe");
  UniqueFd out_r = std::move(out_pipe->read), out_w = std::move(out_pipe->write);
  UniqueFd err_r = std::move(err_pipe->read), err_w = std::move(err_pipe->write);
  std::vector<std::string> env_strings = HostEnv(env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const char* shell = ::access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) return ErrorFromErrno(errno, "fork");
  if (pid == 0) {
    ::setsid();
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(out_w.get(), 1);
    ::dup2(err_w.get(), 2);
    ::execle(shell, shell, "-c", command.c_str(), nullptr, envp.data());
    ::_exit(127);
  }
  out_w.Reset();
  err_w.Reset();
  Captured out, err;
  HostRun r;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= timeout) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    Drain(out_r.get(), err_r.get(), 20, &out, &err);
  }
  Drain(out_r.get(), err_r.get(), 0, &out, &err);
  if (r.timed_out) ::kill(-pid, SIGKILL);  // the group may outlive its leader
  r.out = out.Text();
  r.err = err.Text();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

}  // namespace

LocalSandbox::LocalSandbox(std::string id, std::vector<LocalMapping> mappings, bool allow_host_bash)
    : Sandbox(std::move(id)), mappings_(std::move(mappings)), allow_host_bash_(allow_host_bash) {
  std::sort(mappings_.begin(), mappings_.end(), [](const auto& a, const auto& b) {
    return a.container_path.size() > b.container_path.size();
  });
}

SbResult<ResolvedPath> LocalSandbox::Resolve(const std::string& path, bool write) const {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));  // before the checks the cut path would pass
  if (HasDotDot(path)) {
    return SandboxError{SandboxErrc::kPathEscape, "Access denied: path traversal detected", EACCES};
  }
  // Repeated slashes name the same path as one; left in, "/mnt/data//x" mapped to the
  // absolute rel "/x" (found by tests/fuzz/fuzz_local_paths).
  std::string p;
  for (char c : path) {
    if (c != '/' || p.empty() || p.back() != '/') p += c;
  }
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  for (const auto& m : mappings_) {
    const std::string& c = m.container_path;
    if (p != c && p.rfind(c + "/", 0) != 0) continue;
    std::string rel = p == c ? "." : p.substr(c.size() + 1);
    if (c == "/mnt/user-data" && rel != ".") {
      std::string first = rel.substr(0, rel.find('/'));
      if (first != "workspace" && first != "uploads" && first != "outputs") break;
    }
    if (write && m.read_only) {
      return SandboxError{SandboxErrc::kReadOnly, "Read-only file system", EROFS};
    }
    ResolvedPath rp;
    rp.view.root = m.host_path;
    rp.view.in_root = false;
    rp.rel = rel;
    rp.view_prefix = c;
    rp.virtual_path = path;
    return rp;
  }
  return SandboxError{SandboxErrc::kPathEscape, kAllowedMessage, EACCES};
}

std::string LocalSandbox::ToHostPaths(const std::string& text) const {
  std::string s = text;
  for (const auto& m : mappings_) s = ReplaceAll(s, m.container_path, m.host_path);
  return s;
}

std::string LocalSandbox::MaskHostPaths(const std::string& text) const {
  std::vector<const LocalMapping*> by_host;
  for (const auto& m : mappings_) by_host.push_back(&m);
  std::sort(by_host.begin(), by_host.end(),
            [](auto* a, auto* b) { return a->host_path.size() > b->host_path.size(); });
  std::string s = text;
  for (auto* m : by_host) s = ReplaceAll(s, m->host_path, m->container_path);
  return s;
}

SbResult<CommandResult> LocalSandbox::DoExecuteCommand(const std::string& command,
                                                       const EnvList& env,
                                                       std::optional<double> timeout) {
  if (!allow_host_bash_) {
    return SandboxError{SandboxErrc::kUnavailable, kHostBashDisabledMessage, EPERM};
  }
  for (const auto& [k, v] : env) {
    if (!IsValidEnvName(k)) {
      return SandboxError{SandboxErrc::kInvalidArgument, "invalid env name: " + k};
    }
  }
  const double seconds = timeout.value_or(kDefaultCommandTimeoutSeconds);
  auto run = RunOnHost(ToHostPaths(command), env, seconds);
  if (!run) return run.error();
  CommandResult r;
  r.exit_code = run->exit_code;
  r.timed_out = run->timed_out;
  if (r.timed_out) r.limit = "wall_time";
  r.wall_ms = run->wall_ms;
  r.text =
      MaskHostPaths(FormatCommandText(run->out, run->err, r.exit_code,
                                      r.timed_out ? std::optional<double>(seconds) : std::nullopt));
  return r;
}

SbResult<std::string> LocalSandbox::DoReadFile(const std::string& path,
                                               std::optional<int> start_line,
                                               std::optional<int> end_line) {
  auto rp = Resolve(path, false);
  if (!rp) return rp.error();
  return OpsReadText(*rp, start_line, end_line);
}

SbResult<std::string> LocalSandbox::DoDownloadFile(const std::string& path) {
  if (path != "/mnt/user-data" && path.rfind("/mnt/user-data/", 0) != 0) {
    return SandboxError{SandboxErrc::kPermissionDenied,
                        "Access denied: downloads are limited to /mnt/user-data", EACCES};
  }
  auto rp = Resolve(path, false);
  if (!rp) return rp.error();
  return OpsReadBytes(*rp, kDownloadMaxBytes);
}

SbResult<std::vector<std::string>> LocalSandbox::DoListDir(const std::string& path, int max_depth) {
  auto rp = Resolve(path, false);
  if (!rp) return rp.error();
  return OpsListDir(*rp, max_depth);
}

SbStatus LocalSandbox::DoWriteFile(const std::string& path, const std::string& content,
                                   bool append) {
  auto rp = Resolve(path, true);
  if (!rp) return rp.error();
  return OpsWrite(*rp, content, append);
}

SbStatus LocalSandbox::DoUpdateFile(const std::string& path, const std::string& bytes) {
  return WriteFile(path, bytes, false);
}

SbResult<GlobResult> LocalSandbox::DoGlob(const std::string& path, const std::string& pattern,
                                          bool include_dirs, int max_results) {
  auto rp = Resolve(path, false);
  if (!rp) return rp.error();
  return OpsGlob(*rp, pattern, include_dirs, max_results);
}

SbResult<GrepResult> LocalSandbox::DoGrep(const std::string& path, const std::string& pattern,
                                          const GrepOptions& options) {
  auto rp = Resolve(path, false);
  if (!rp) return rp.error();
  return OpsGrep(*rp, pattern, options);
}

LocalSandboxProvider::LocalSandboxProvider(ProviderConfig config)
    : ProviderBase(std::move(config), 256) {}

std::string LocalSandboxProvider::IdFor(const ThreadDirs& dirs) const {
  return "local:" + dirs.user_id + ":" + dirs.thread_id;
}

std::vector<LocalMapping> LocalSandboxProvider::MappingsFor(const ThreadDirs& dirs) const {
  std::vector<LocalMapping> m = {{"/mnt/user-data", dirs.user_data, false},
                                 {"/mnt/acp-workspace", dirs.acp_workspace, true}};
  if (config_.skills_path) m.push_back({config_.skills_container_path, *config_.skills_path, true});
  for (const auto& mount : config_.mounts) {
    m.push_back({mount.container_path, mount.host_path, mount.read_only});
  }
  return m;
}

Result<std::shared_ptr<Sandbox>> LocalSandboxProvider::Create(const ThreadDirs& dirs) {
  return std::shared_ptr<Sandbox>(
      new LocalSandbox(IdFor(dirs), MappingsFor(dirs), config_.allow_host_bash));
}

}  // namespace corral::runtime
