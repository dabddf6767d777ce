#include "bench/rootless.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "bench/peers.h"
#include "bench/results.h"
#include "bench/workloads.h"
#include "runtime/pool/pool_client.h"

namespace corral::bench {
namespace {

// The unprivileged account, and a directory of its own holding its XDG_RUNTIME_DIR and
// corral's config. Shared by every row so that they pay the same way in: setpriv, then
// env setting XDG_RUNTIME_DIR, then the sandbox. Counted: the directory goes when the last
// row that prepared it cleans up (the pooled row's server lives in it until then).
class UnprivilegedCaller {
 public:
  Status Prepare() {
    if (!prefix_.empty()) {
      ++users_;
      return Ok();
    }
    passwd* pw = ::getpwnam(kRootlessBenchUser);
    if (pw == nullptr) {
      return Error(ErrorCode::kNotFound,
                   std::string("no '") + kRootlessBenchUser +
                       "' account (the integration tests create it; or `useradd --system "
                       "--no-create-home --shell /usr/sbin/nologin " +
                       kRootlessBenchUser + "`)");
    }
    char tmpl[] = "/tmp/corral-bench-rootless.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return Error::FromErrno(errno, "mkdtemp");
    dir_ = tmpl;
    std::string runtime = dir_ + "/runtime";
    if (::mkdir(runtime.c_str(), 0700) != 0) return Error::FromErrno(errno, "mkdir " + runtime);
    // A cgroup v1 or hybrid host gives an unprivileged user no cgroups: corral refuses its
    // limits unless told to run with rlimits only — which is what bwrap has too.
    RETURN_IF_ERROR(
        WriteRegularFile(dir_ + "/config.yaml", "unsafe:\n  allow_missing_limits: true\n"));
    for (const std::string& path : {dir_, runtime, dir_ + "/config.yaml"}) {
      if (::chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        return Error::FromErrno(errno, "chown " + path);
      }
    }
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    prefix_ = {"/usr/bin/setpriv",
               "--reuid=" + std::to_string(pw->pw_uid),
               "--regid=" + std::to_string(pw->pw_gid),
               "--clear-groups",
               "--",
               "/usr/bin/env",
               "XDG_RUNTIME_DIR=" + runtime};
    users_ = 1;
    return Ok();
  }
  void Cleanup() {
    if (users_ > 0 && --users_ > 0) return;
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    dir_.clear();
    prefix_.clear();
  }
  // Waits, as the account, until the pool server at `socket` is full: the server answers
  // only its own user. A forked child takes the account's ids and asks; the bench is
  // single-threaded where this is called (Prepare, and Settle in the latency rounds).
  Status WaitForPoolReady(const std::string& socket) const {
    pid_t pid = ::fork();
    if (pid < 0) return Error::FromErrno(errno, "fork");
    if (pid == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid_, gid_, gid_) != 0 ||
          ::setresuid(uid_, uid_, uid_) != 0) {
        ::_exit(2);
      }
      ::_exit(runtime::WaitForPoolReady(socket) ? 0 : 1);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Ok();
    return Error(ErrorCode::kIo,
                 "the pool server at " + socket + " is not ready (see " + dir_ + "/pool.log)");
  }
  const std::vector<std::string>& prefix() const { return prefix_; }
  const std::string& dir() const { return dir_; }
  std::string config() const { return dir_ + "/config.yaml"; }

 private:
  std::string dir_;
  std::vector<std::string> prefix_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  int users_ = 0;
};

class RootlessLauncher : public Launcher {
 public:
  RootlessLauncher(std::shared_ptr<UnprivilegedCaller> caller, std::string name, std::string group)
      : caller_(std::move(caller)), name_(std::move(name)), group_(std::move(group)) {}
  std::string name() const override { return name_; }
  std::string group() const override { return group_; }
  Status Prepare() override {
    RETURN_IF_ERROR(caller_->Prepare());
    // Unprivileged, the caller must reach the program through every parent directory.
    if (::access("/usr/bin/setpriv", X_OK) != 0) {
      return Error(ErrorCode::kNotFound, "setpriv not installed");
    }
    return Ok();
  }
  void Cleanup() override { caller_->Cleanup(); }
  Status Launch(const Workload& w) override {
    std::vector<std::string> argv = caller_->prefix();
    for (const auto& a : Command()) argv.push_back(a);
    argv.insert(argv.end(), w.argv.begin(), w.argv.end());
    return SpawnAndWait(argv);
  }

 protected:
  virtual std::vector<std::string> Command() const = 0;
  std::shared_ptr<UnprivilegedCaller> caller_;

 private:
  std::string name_;
  std::string group_;
};

class CorralRootlessRun : public RootlessLauncher {
 public:
  CorralRootlessRun(std::shared_ptr<UnprivilegedCaller> caller, std::string exe)
      : RootlessLauncher(std::move(caller), kCorralRootlessRunName, "layer"),
        exe_(std::move(exe)) {}
  std::string description() const override {
    return std::string("as ") + kRootlessBenchUser +
           " (setpriv, env XDG_RUNTIME_DIR=...): corral run --pool off -- <workload> "
           "(user namespace; no cgroup limits on a v1 host: unsafe.allow_missing_limits)";
  }

 protected:
  std::vector<std::string> Command() const override {
    return {exe_, "run", "--config", caller_->config(), "--pool", "off", "--"};
  }

 private:
  std::string exe_;
};

// The same runs served by a `corral pool` the account started (a rootless pool server:
// its jails are rootless ones, built before the run asks). The pool refills in Settle(),
// outside the timing, as the root pool row does.
class CorralRootlessPoolRun : public RootlessLauncher {
 public:
  CorralRootlessPoolRun(std::shared_ptr<UnprivilegedCaller> caller, std::string exe)
      : RootlessLauncher(std::move(caller), kCorralRootlessPoolRunName, "layer"),
        exe_(std::move(exe)) {}
  std::string description() const override {
    return std::string("as ") + kRootlessBenchUser +
           ": corral pool --size 2 --socket SOCKET & corral run --pool SOCKET -- <workload> "
           "(both rootless, same config as the cold row)";
  }
  Status Prepare() override {
    RETURN_IF_ERROR(RootlessLauncher::Prepare());
    socket_ = caller_->dir() + "/pool.sock";
    std::vector<std::string> argv = caller_->prefix();
    argv.insert(argv.end(),
                {exe_, "pool", "--config", caller_->config(), "--size", "2", "--socket", socket_});
    ASSIGN_OR_RETURN(pid_, SpawnBackground(argv, caller_->dir() + "/pool.log"));
    // The server binds its socket first, then fills: wait for both.
    for (int i = 0; i < 1000 && !std::filesystem::exists(socket_); ++i) ::usleep(10 * 1000);
    return caller_->WaitForPoolReady(socket_);
  }
  void Cleanup() override {
    if (pid_ > 0) StopBackground(pid_);
    pid_ = -1;
    RootlessLauncher::Cleanup();
  }
  void Settle() override { (void)caller_->WaitForPoolReady(socket_); }

 protected:
  std::vector<std::string> Command() const override {
    return {exe_, "run", "--config", caller_->config(), "--pool", socket_, "--"};
  }

 private:
  std::string exe_;
  std::string socket_;
  pid_t pid_ = -1;
};

class BwrapUnprivileged : public RootlessLauncher {
 public:
  explicit BwrapUnprivileged(std::shared_ptr<UnprivilegedCaller> caller)
      : RootlessLauncher(std::move(caller), kBwrapRootlessName, "peer") {}
  std::string description() const override {
    return std::string("as ") + kRootlessBenchUser +
           " (setpriv, env XDG_RUNTIME_DIR=...): bwrap with the bwrap row's arguments";
  }
  Status Prepare() override {
    RETURN_IF_ERROR(RootlessLauncher::Prepare());
    path_ = FindOnPath("bwrap");
    if (path_.empty()) return Error(ErrorCode::kNotFound, "not installed");
    return Ok();
  }

 protected:
  std::vector<std::string> Command() const override {
    std::vector<std::string> argv = {path_};
    for (const auto& a : BwrapSandboxArgs()) argv.push_back(a);
    return argv;
  }

 private:
  std::string path_;
};

}  // namespace

std::vector<std::unique_ptr<Launcher>> MakeRootlessRows(const std::string& corral_exe) {
  auto caller = std::make_shared<UnprivilegedCaller>();
  std::vector<std::unique_ptr<Launcher>> out;
  out.push_back(std::make_unique<CorralRootlessRun>(caller, corral_exe));
  out.push_back(std::make_unique<CorralRootlessPoolRun>(caller, corral_exe));
  out.push_back(std::make_unique<BwrapUnprivileged>(caller));
  return out;
}

}  // namespace corral::bench
