#include "bench/peers.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "bench/launcher.h"
#include "runtime/oci/oci_bundle.h"
#include "runtime/oci/oci_runtime.h"

namespace corral::bench {
namespace {

namespace fs = std::filesystem;

// A peer that is one command line: prefix + workload argv.
class CommandPeer : public Launcher {
 public:
  CommandPeer(std::string name, std::vector<std::string> prefix)
      : name_(std::move(name)), prefix_(std::move(prefix)) {}
  std::string name() const override { return name_; }
  std::string group() const override { return "peer"; }
  std::string description() const override {
    std::string d;
    for (const auto& p : prefix_) d += (d.empty() ? "" : " ") + p;
    return d + " <workload>";
  }
  Status Prepare() override {
    path_ = FindOnPath(prefix_[0]);
    if (path_.empty()) return Error(ErrorCode::kNotFound, "not installed");
    return Ok();
  }
  Status Launch(const Workload& w) override {
    std::vector<std::string> argv = prefix_;
    argv[0] = path_;
    argv.insert(argv.end(), w.argv.begin(), w.argv.end());
    return SpawnAndWait(argv);
  }

 protected:
  std::string name_;
  std::vector<std::string> prefix_;
  std::string path_;
};

// docker/podman: only if the engine answers and a busybox image is already present (no
// pulls: the benchmark must not depend on the network).
class EnginePeer : public CommandPeer {
 public:
  explicit EnginePeer(const std::string& engine)
      : CommandPeer(engine, {engine, "run", "--rm", "--network", "none", "busybox"}) {}
  Status Prepare() override {
    RETURN_IF_ERROR(CommandPeer::Prepare());
    if (!SpawnAndWait({"/usr/bin/timeout", "5", path_, "info"}))
      return Error(ErrorCode::kUnsupported,
                   "installed, but no engine answers `" + name_ + " info`");
    if (!SpawnAndWait({"/usr/bin/timeout", "5", path_, "image", "inspect", "busybox"}))
      return Error(ErrorCode::kUnsupported, "no local busybox image (no pulls)");
    return Ok();
  }
  std::optional<std::string> Unsupported(const Workload& w) const override {
    if (w.argv[0] == "/usr/bin/python3") return "no python3 in the busybox image";
    return std::nullopt;
  }
};

// crun / runc with a bundle per workload over one busybox-static rootfs.
//
// The config.json is corral's minimal one (runtime/oci/oci_bundle.h, MinimalOciConfigJson);
// `mode: container` itself is measured as a corral rung (bench/corral_rungs.cc).
//
// crun refuses to start on a hybrid host (runtime/oci/oci_runtime.h). Each launch here
// therefore enters a mount namespace prepared once by a holder process with the product's
// HideUnifiedCgroup(); setns() costs microseconds.
class OciPeer : public Launcher {
 public:
  explicit OciPeer(std::string runtime) : runtime_(std::move(runtime)) {}
  std::string name() const override { return runtime_; }
  std::string group() const override { return "peer"; }
  std::string description() const override {
    return runtime_ + " run --bundle B ID (busybox-static rootfs, generated config.json)" +
           (hide_unified_ ? "; in a private mount ns without the cgroup2 mount" : "");
  }
  bool thread_safe() const override { return true; }
  Status Prepare() override;
  void Cleanup() override;
  std::optional<std::string> Unsupported(const Workload& w) const override {
    if (w.argv[0] == "/usr/bin/python3") return "no python3 in the busybox rootfs";
    return std::nullopt;
  }
  Status Launch(const Workload& w) override;

 private:
  Status StartHolder();

  std::string runtime_;
  std::string path_;
  std::string dir_;
  bool hide_unified_ = false;
  pid_t holder_ = -1;
  UniqueFd mnt_ns_;
  std::atomic<int> counter_{0};
};

Status OciPeer::StartHolder() {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd ready_r(ready[0]), ready_w(ready[1]);
  holder_ = fork();
  if (holder_ < 0) return Error::FromErrno(errno, "fork");
  if (holder_ == 0) {
    ready_r.Reset();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char ok = runtime::oci::HideUnifiedCgroup() == 0 ? 1 : 0;
    (void)!write(ready_w.get(), &ok, 1);
    ready_w.Reset();
    for (;;) pause();
  }
  ready_w.Reset();
  char ok = 0;
  if (read(ready_r.get(), &ok, 1) != 1 || ok != 1)
    return Error(ErrorCode::kSetupFailed, "could not prepare a mount ns without cgroup2");
  std::string ns = "/proc/" + std::to_string(holder_) + "/ns/mnt";
  mnt_ns_.Reset(open(ns.c_str(), O_RDONLY | O_CLOEXEC));
  if (!mnt_ns_) return Error::FromErrno(errno, "open " + ns);
  return Ok();
}

Status OciPeer::Prepare() {
  path_ = FindOnPath(runtime_);
  if (path_.empty()) return Error(ErrorCode::kNotFound, "not installed");
  const std::string busybox = access("/usr/bin/busybox", X_OK) == 0 ? "/usr/bin/busybox" : "";
  if (busybox.empty()) return Error(ErrorCode::kNotFound, "no busybox-static for the rootfs");
  char tmpl[] = "/tmp/corral-bench-oci.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Error::FromErrno(errno, "mkdtemp");
  dir_ = tmpl;
  std::error_code ec;
  fs::create_directories(dir_ + "/rootfs/bin", ec);
  for (const char* d : {"proc", "dev", "tmp", "sys"})
    fs::create_directories(dir_ + "/rootfs/" + d, ec);
  fs::copy_file(busybox, dir_ + "/rootfs/bin/busybox", ec);
  if (ec) return Error(ErrorCode::kIo, "copying busybox: " + ec.message());
  for (const char* applet : {"sh", "true", "echo"})
    fs::create_symlink("busybox", dir_ + "/rootfs/bin/" + applet, ec);
  hide_unified_ = runtime_ == "crun" && runtime::oci::HybridCgroupHost();
  if (hide_unified_) RETURN_IF_ERROR(StartHolder());
  return Ok();
}

void OciPeer::Cleanup() {
  if (holder_ > 0) {
    kill(holder_, SIGKILL);
    waitpid(holder_, nullptr, 0);
    holder_ = -1;
  }
  mnt_ns_.Reset();
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
}

Status OciPeer::Launch(const Workload& w) {
  // One bundle per workload; config.json written once, reused for every launch.
  std::string bundle = dir_ + "/bundle-" + std::to_string(std::hash<std::string>{}(w.name));
  if (access((bundle + "/config.json").c_str(), F_OK) != 0) {
    std::error_code ec;
    fs::create_directories(bundle, ec);
    RETURN_IF_ERROR(WriteRegularFile(bundle + "/config.json.tmp",
                                     runtime::oci::MinimalOciConfigJson(dir_ + "/rootfs", w.argv)));
    if (rename((bundle + "/config.json.tmp").c_str(), (bundle + "/config.json").c_str()) != 0)
      return Error::FromErrno(errno, "rename config.json");
  }
  std::string id =
      "corral-bench-" + std::to_string(getpid()) + "-" + std::to_string(counter_.fetch_add(1));
  std::vector<std::string> argv = {path_, "run", "--bundle", bundle, id};
  if (!hide_unified_) return SpawnAndWait(argv);
  // Enter the prepared mount namespace in a forked child (single-threaded, as
  // setns(CLONE_NEWNS) requires), then exec the runtime.
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) {
    if (setns(mnt_ns_.get(), CLONE_NEWNS) != 0) _exit(120);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error(ErrorCode::kIo, runtime_ + " run failed (status " + std::to_string(status) + ")");
  return Ok();
}

}  // namespace

std::vector<std::string> BwrapSandboxArgs() {
  return {"--unshare-all",
          "--die-with-parent",
          "--ro-bind",
          "/usr",
          "/usr",
          "--symlink",
          "usr/bin",
          "/bin",
          "--symlink",
          "usr/lib",
          "/lib",
          "--symlink",
          "usr/lib64",
          "/lib64",
          "--proc",
          "/proc",
          "--dev",
          "/dev",
          "--"};
}

std::vector<std::unique_ptr<Launcher>> MakePeers() {
  std::vector<std::unique_ptr<Launcher>> out;
  out.push_back(std::make_unique<CommandPeer>(
      "unshare", std::vector<std::string>{"unshare", "--pid", "--fork", "--mount", "--uts", "--ipc",
                                          "--net", "--mount-proc", "--"}));
  std::vector<std::string> bwrap = {"bwrap"};
  for (const auto& a : BwrapSandboxArgs()) bwrap.push_back(a);
  out.push_back(std::make_unique<CommandPeer>("bwrap", bwrap));
  out.push_back(std::make_unique<CommandPeer>(
      "nsjail",
      std::vector<std::string>{"nsjail", "--mode", "o", "--quiet", "--chroot", "/", "--"}));
  out.push_back(std::make_unique<CommandPeer>(
      "firejail",
      std::vector<std::string>{"firejail", "--quiet", "--noprofile", "--net=none", "--"}));
  out.push_back(std::make_unique<OciPeer>("crun"));
  out.push_back(std::make_unique<OciPeer>("runc"));
  out.push_back(std::make_unique<EnginePeer>("docker"));
  out.push_back(std::make_unique<EnginePeer>("podman"));
  return out;
}

}  // namespace corral::bench
