#include "bench/rootless.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "bench/peers.h"
#include "bench/results.h"
#include "bench/workloads.h"

namespace corral::bench {
namespace {

// The unprivileged account, and a directory of its own holding its XDG_RUNTIME_DIR and
// corral's config. Shared by both rows so that they pay the same way in: setpriv, then
// env setting XDG_RUNTIME_DIR, then the sandbox.
class UnprivilegedCaller {
 public:
  Status Prepare() {
    if (!prefix_.empty()) return Ok();
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
    RETURN_IF_ERROR(WriteRegularFile(dir_ + "/config.yaml",
                                     "unsafe:\n  allow_missing_limits: true\n"));
    for (const std::string& path : {dir_, runtime, dir_ + "/config.yaml"}) {
      if (::chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        return Error::FromErrno(errno, "chown " + path);
      }
    }
    prefix_ = {"/usr/bin/setpriv",
               "--reuid=" + std::to_string(pw->pw_uid),
               "--regid=" + std::to_string(pw->pw_gid),
               "--clear-groups",
               "--",
               "/usr/bin/env",
               "XDG_RUNTIME_DIR=" + runtime};
    return Ok();
  }
  void Cleanup() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    dir_.clear();
    prefix_.clear();
  }
  const std::vector<std::string>& prefix() const { return prefix_; }
  std::string config() const { return dir_ + "/config.yaml"; }

 private:
  std::string dir_;
  std::vector<std::string> prefix_;
};

class RootlessLauncher : public Launcher {
 public:
  RootlessLauncher(std::shared_ptr<UnprivilegedCaller> caller, std::string name,
                   std::string group)
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
  out.push_back(std::make_unique<BwrapUnprivileged>(caller));
  return out;
}

}  // namespace corral::bench
