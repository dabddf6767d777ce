#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "base/files.h"
#include "cgroups/internal.h"

namespace corral::cgroups::internal {

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Status WriteLimit(const std::string& limit, const std::string& path, const std::string& value) {
  auto written = WriteFile(path, value);
  if (!written) return written.error().WithContext(limit);
  return Ok();
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> SplitWords(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::map<std::string, int64_t> ParseKeyed(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> w = SplitWords(line);
    if (w.size() != 2) continue;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(w[1].c_str(), &end, 10);
    if (errno != 0 || *end != '\0') continue;
    out[w[0]] = v;
  }
  return out;
}

Result<std::optional<std::string>> ReadIfExists(const std::string& path, StatFiles* files) {
  if (files != nullptr) return files->Read(path);
  auto text = ReadFile(path);
  if (!text) {
    // ENODEV: the cgroup was removed between the open and the read (kernfs refuses reads
    // of a removed node) — as gone as ENOENT. A walk of a sandbox's tree meets this when one
    // of its exec cgroups is being removed at the same time.
    const int err = text.error().sys_errno();
    if (err == ENOENT || err == ENODEV) return std::optional<std::string>();
    return text.error();
  }
  return std::optional<std::string>(std::move(*text));
}

Result<std::optional<int64_t>> ReadIntIfExists(const std::string& path, StatFiles* files) {
  ASSIGN_OR_RETURN(auto text, ReadIfExists(path, files));
  if (!text) return std::optional<int64_t>();
  std::string t = Trim(*text);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || errno != 0 || *end != '\0') {
    return Error(ErrorCode::kIo, path + ": not an integer: '" + t + "'");
  }
  return std::optional<int64_t>(v);
}

Result<std::optional<std::map<std::string, int64_t>>> ReadKeyedIfExists(const std::string& path,
                                                                        StatFiles* files) {
  ASSIGN_OR_RETURN(auto text, ReadIfExists(path, files));
  if (!text) return std::optional<std::map<std::string, int64_t>>();
  return std::optional<std::map<std::string, int64_t>>(ParseKeyed(*text));
}

Result<std::vector<pid_t>> ReadPids(const std::string& procs_path) {
  ASSIGN_OR_RETURN(auto text, ReadIfExists(procs_path));
  std::vector<pid_t> out;
  if (!text) return out;
  for (const auto& w : SplitWords(*text)) {
    char* end = nullptr;
    long v = std::strtol(w.c_str(), &end, 10);
    if (*end != '\0' || v <= 0) {
      return Error(ErrorCode::kIo, procs_path + ": not a pid: '" + w + "'");
    }
    out.push_back(static_cast<pid_t>(v));
  }
  return out;
}

Result<std::vector<pid_t>> ReadPidsRecursive(const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<pid_t> out, ReadPids(JoinPath(dir, "cgroup.procs")));
  ASSIGN_OR_RETURN(auto children, ListSubdirs(dir));
  for (const auto& c : children) {
    ASSIGN_OR_RETURN(auto more, ReadPidsRecursive(JoinPath(dir, c)));
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

Result<std::vector<std::string>> ListSubdirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return out;
    return Error::FromErrno(errno, "listing " + dir);
  }
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      is_dir = ::lstat(JoinPath(dir, name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (is_dir) out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Status MakeDir(const std::string& path, const FsHooks& hooks) {
  if (::mkdir(path.c_str(), 0755) != 0) {
    return Error::FromErrno(errno, "creating cgroup " + path);
  }
  if (hooks.after_mkdir) RETURN_IF_ERROR(hooks.after_mkdir(path));
  return Ok();
}

Status EnsureDir(const std::string& path, const FsHooks& hooks) {
  auto made = MakeDir(path, hooks);
  if (!made && made.error().sys_errno() == EEXIST) return Ok();
  return made;
}

Result<bool> RemoveIfEmpty(const std::string& dir, const FsHooks& hooks) {
  int err = 0;
  if (hooks.rmdir) {
    Status st = hooks.rmdir(dir);
    err = st ? 0 : st.error().sys_errno();
    if (!st && err == 0) return st.error();
  } else if (::rmdir(dir.c_str()) != 0) {
    err = errno;
  }
  if (err == 0 || err == ENOENT) return true;
  if (err == EBUSY || err == ENOTEMPTY) return false;
  return Error::FromErrno(err, "removing cgroup " + dir);
}

Status RemoveTree(const std::string& dir, const FsHooks& hooks) {
  ASSIGN_OR_RETURN(auto children, ListSubdirs(dir));
  for (const auto& c : children) RETURN_IF_ERROR(RemoveTree(JoinPath(dir, c), hooks));
  auto removed =
      WaitUntil([&] { return RemoveIfEmpty(dir, hooks); }, std::chrono::milliseconds(1000));
  if (!removed) return removed.error();
  if (!*removed) {
    return Error(ErrorCode::kIo, "removing cgroup " + dir + ": still busy after 1 s", EBUSY);
  }
  return Ok();
}

Result<UniqueFd> OpenPath(const std::string& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, "opening " + path);
  return fd;
}

Status WriteFreezeAndWait(const std::string& file, const char* on, const char* off, bool frozen,
                          const std::function<Result<bool>()>& reached, const std::string& what) {
  RETURN_IF_ERROR(WriteFile(file, frozen ? on : off));
  ASSIGN_OR_RETURN(bool done, WaitUntil(reached, kFreezeTimeout));
  if (done) return Ok();
  if (frozen) (void)WriteFile(file, off);  // half-frozen helps nobody
  return Error(ErrorCode::kIo, what + ": did not " + (frozen ? "freeze" : "thaw") + " within " +
                                   std::to_string(kFreezeTimeout.count()) +
                                   " ms (a task in uninterruptible sleep?)");
}

Result<bool> WaitUntil(const std::function<Result<bool>()>& done,
                       std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sleep = std::chrono::microseconds(50);
  for (;;) {
    ASSIGN_OR_RETURN(bool ok, done());
    if (ok) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(20000));
  }
}

Status SignalPids(const std::vector<pid_t>& pids, int sig) {
  for (pid_t p : pids) {
    if (::kill(p, sig) != 0 && errno != ESRCH) {
      return Error::FromErrno(errno, "kill(" + std::to_string(p) + ")");
    }
  }
  return Ok();
}

Status ValidateLimits(const Limits& limits) {
  if (limits.memory_bytes && *limits.memory_bytes <= 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "memory limit: must be positive, got " + std::to_string(*limits.memory_bytes));
  }
  if (limits.cpus && !(std::isfinite(*limits.cpus) && *limits.cpus > 0)) {
    return Error(ErrorCode::kInvalidArgument, "cpu limit: must be a positive number of cpus, got " +
                                                  std::to_string(*limits.cpus));
  }
  if (limits.pids && *limits.pids <= 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "pids limit: must be positive, got " + std::to_string(*limits.pids));
  }
  return Ok();
}

int64_t CpuQuotaUsec(double cpus) {
  // The kernel rejects quotas below 1 ms.
  return std::max<int64_t>(1000, std::llround(cpus * static_cast<double>(kCpuPeriodUsec)));
}

Status LimitReport::Missing(const std::string& limit, const std::string& why) {
  if (!allow_missing_) return Error(ErrorCode::kUnsupported, limit + ": " + why);
  warnings_.push_back(limit + ": " + why + " (skipped)");
  return Ok();
}

}  // namespace corral::cgroups::internal
