// The top rungs of the ladder: corral itself, measured the way users pay for it.
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/launcher.h"
#include "bench/results.h"
#include "runtime/oci/oci_runtime.h"
#include "runtime/pool/jail_pool.h"
#include "runtime/pool/pool_client.h"
#include "runtime/run/supervisor.h"

namespace corral::bench {
namespace {

// Ok if an in-process run exited 0; else what happened, with its stderr.
Status ExitedZero(const char* who, const runtime::RunOutcome& out) {
  if (out.status == runtime::RunStatus::kExited && out.exit_code == 0) return Ok();
  return Error(ErrorCode::kIo, std::string(who) + ": " + runtime::RunStatusName(out.status) + " " +
                                   std::to_string(out.exit_code) + " " + out.stderr_stream.text);
}

// `corral run -- <workload>`: exec of the binary, as a user or a script runs it.
class CorralRunLauncher : public Launcher {
 public:
  explicit CorralRunLauncher(std::string exe) : exe_(std::move(exe)) {}
  std::string name() const override { return kCorralRunName; }
  std::string group() const override { return "layer"; }
  std::string description() const override { return "corral run --pool off -- <workload>"; }
  Status Launch(const Workload& w) override {
    std::vector<std::string> argv = {exe_, "run", "--pool", "off", "--"};
    argv.insert(argv.end(), w.argv.begin(), w.argv.end());
    return SpawnAndWait(argv);
  }

 private:
  std::string exe_;
};

// `corral run --mode container --oci-runtime RT -- <workload>`: the same spec as
// CorralRunLauncher, as an OCI bundle run by crun or runc (runtime/oci).
class CorralContainerRunLauncher : public Launcher {
 public:
  CorralContainerRunLauncher(std::string exe, std::string runtime)
      : exe_(std::move(exe)), runtime_(std::move(runtime)) {}
  std::string name() const override { return "corral run --mode container (" + runtime_ + ")"; }
  std::string group() const override { return "layer"; }
  std::string description() const override {
    return "corral run --pool off --mode container --oci-runtime " + runtime_ + " -- <workload>";
  }
  Status Prepare() override {
    if (geteuid() != 0) return Error(ErrorCode::kUnsupported, "mode container needs root");
    auto rt = runtime::oci::FindOciRuntime(runtime_);
    if (!rt) return rt.error();
    return Ok();
  }
  Status Launch(const Workload& w) override {
    std::vector<std::string> argv = {exe_,        "run",           "--pool", "off", "--mode",
                                     "container", "--oci-runtime", runtime_, "--"};
    argv.insert(argv.end(), w.argv.begin(), w.argv.end());
    return SpawnAndWait(argv);
  }

 private:
  std::string exe_;
  std::string runtime_;
};

// A `corral pool --size 2` started for the benchmark on a private socket.
class PoolServerProcess {
 public:
  Status Start(const std::string& exe) {
    char tmpl[] = "/tmp/corral-bench-pool.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Error::FromErrno(errno, "mkdtemp");
    dir_ = tmpl;
    socket_ = dir_ + "/pool.sock";
    ASSIGN_OR_RETURN(pid_, SpawnBackground({exe, "pool", "--size", "2", "--socket", socket_},
                                           dir_ + "/pool.log"));
    // The server binds its socket first, then fills: wait for both.
    for (int i = 0; i < 1000 && !std::filesystem::exists(socket_); ++i) usleep(10 * 1000);
    return WaitReady();
  }
  // Pool full, no exec slot being prepared.
  Status WaitReady() const {
    Status ready = runtime::WaitForPoolReady(socket_);
    if (!ready) return Error(ErrorCode::kIo, "corral pool: " + ready.error().message());
    return Ok();
  }
  void Stop() {
    StopBackground(pid_);
    pid_ = -1;
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
  const std::string& socket() const { return socket_; }

 private:
  std::string dir_;
  std::string socket_;
  pid_t pid_ = -1;
};

// `corral run -- <workload>` served by a `corral pool`: the same command line and the
// same isolation (a fresh jail per run), the jail built before the run asked. The pool
// refills in Settle(), outside the timing.
class CorralPoolRunLauncher : public Launcher {
 public:
  explicit CorralPoolRunLauncher(std::string exe) : exe_(std::move(exe)) {}
  std::string name() const override { return kCorralPoolRunName; }
  std::string group() const override { return "layer"; }
  std::string description() const override {
    return "corral pool --size 2 & corral run --pool SOCKET -- <workload>";
  }
  Status Prepare() override { return server_.Start(exe_); }
  void Cleanup() override { server_.Stop(); }
  void Settle() override { (void)server_.WaitReady(); }
  Status Launch(const Workload& w) override {
    std::vector<std::string> argv = {exe_, "run", "--pool", server_.socket(), "--"};
    argv.insert(argv.end(), w.argv.begin(), w.argv.end());
    return SpawnAndWait(argv);
  }

 private:
  std::string exe_;
  PoolServerProcess server_;
};

// `corral exec <sandbox> -- <workload>` through a `corral pool`'s exec slot: a process
// already in the sandbox's namespaces and in its own exec cgroup, prepared after the
// previous exec (in Settle(), outside the timing).
class CorralPoolExecLauncher : public Launcher {
 public:
  explicit CorralPoolExecLauncher(std::string exe) : exe_(std::move(exe)) {}
  std::string name() const override { return kCorralPoolExecName; }
  std::string group() const override { return "layer"; }
  std::string description() const override {
    return "corral pool & corral exec --pool SOCKET <sandbox> -- <workload>";
  }
  Status Prepare() override {
    RETURN_IF_ERROR(server_.Start(exe_));
    name_ = "corral-bench-pexec-" + std::to_string(getpid());
    RETURN_IF_ERROR(SpawnAndWait({exe_, "create", "--name", name_}));
    // The first exec runs the normal way and has the server prepare a slot.
    RETURN_IF_ERROR(SpawnAndWait({exe_, "exec", "--pool", server_.socket(), name_, "--", "true"}));
    return server_.WaitReady();
  }
  void Cleanup() override {
    if (!name_.empty()) (void)SpawnAndWait({exe_, "rm", name_});
    name_.clear();
    server_.Stop();
  }
  void Settle() override { (void)server_.WaitReady(); }
  Status Launch(const Workload& w) override {
    std::vector<std::string> argv = {exe_, "exec", "--pool", server_.socket(), name_, "--"};
    argv.insert(argv.end(), w.argv.begin(), w.argv.end());
    return SpawnAndWait(argv);
  }

 private:
  std::string exe_;
  std::string name_;
  PoolServerProcess server_;
};

// runtime::RunJail() in this process: the library's cost without exec'ing the binary.
// Output captured (and dropped) so the workload cannot scribble over the progress line.
class RunJailLauncher : public Launcher {
 public:
  std::string name() const override { return "runtime::RunJail (in-process)"; }
  std::string group() const override { return "layer"; }
  std::string description() const override {
    return "runtime::RunJail(default JailSpec, capture_output)";
  }
  // RunJail takes over SIGINT/SIGTERM while it runs: one at a time.
  bool thread_safe() const override { return false; }
  Status Launch(const Workload& w) override {
    runtime::JailSpec spec;
    spec.argv = w.argv;
    runtime::RunOptions opts;
    opts.capture_output = true;
    ASSIGN_OR_RETURN(runtime::RunOutcome out, runtime::RunJail(spec, opts));
    return ExitedZero("RunJail", out);
  }
};

// runtime::JailPool in this process: a jail prepared before the command is known (fresh
// namespaces, cgroup and root each time, used once), the way a long-running caller such
// as a daemon would run commands. The pool refills in Settle(), outside the timing.
class JailPoolLauncher : public Launcher {
 public:
  std::string name() const override { return "JailPool in-process (warm)"; }
  std::string group() const override { return "layer"; }
  std::string description() const override {
    return "runtime::JailPool(default JailSpec, 2 ready).Run(capture_output)";
  }
  bool thread_safe() const override { return false; }  // takes over SIGINT/SIGTERM, as RunJail
  Status Prepare() override {
    ASSIGN_OR_RETURN(pool_, runtime::JailPool::Create(runtime::JailSpec(), 2));
    return pool_->WaitUntilFull();
  }
  void Cleanup() override { pool_.reset(); }
  void Settle() override { (void)pool_->WaitUntilFull(); }
  Status Launch(const Workload& w) override {
    runtime::JailSpec spec;
    spec.argv = w.argv;
    runtime::RunOptions opts;
    opts.capture_output = true;
    ASSIGN_OR_RETURN(runtime::RunOutcome out, pool_->Run(spec, opts));
    return ExitedZero("JailPool", out);
  }

 private:
  std::unique_ptr<runtime::JailPool> pool_;
};

// `corral exec <sandbox> -- <workload>` into one persistent sandbox created up front.
class CorralExecLauncher : public Launcher {
 public:
  explicit CorralExecLauncher(std::string exe) : exe_(std::move(exe)) {}
  std::string name() const override { return "corral exec (persistent)"; }
  std::string group() const override { return "layer"; }
  std::string description() const override {
    return "corral create; corral exec <sandbox> -- <workload>";
  }
  Status Prepare() override {
    name_ = "corral-bench-exec-" + std::to_string(getpid());
    return SpawnAndWait({exe_, "create", "--name", name_});
  }
  void Cleanup() override {
    if (!name_.empty()) (void)SpawnAndWait({exe_, "rm", name_});
    name_.clear();
  }
  Status Launch(const Workload& w) override {
    std::vector<std::string> argv = {exe_, "exec", name_, "--"};
    argv.insert(argv.end(), w.argv.begin(), w.argv.end());
    return SpawnAndWait(argv);
  }

 private:
  std::string exe_;
  std::string name_;
};

// One `bash` tool call over the jail provider, when the binary has `corral tool`.
// Thread data and the audit log go to a private --base-dir; the thread's sandbox, created
// by the first call and reused by the others, is removed in Cleanup().
class ToolBashLauncher : public Launcher {
 public:
  explicit ToolBashLauncher(std::string exe) : exe_(std::move(exe)) {}
  std::string name() const override { return "tool call: bash"; }
  std::string group() const override { return "layer"; }
  std::string description() const override {
    return "corral tool bash --provider jail --thread T --args '{\"command\":...}'";
  }
  Status Prepare() override {
    auto help = SpawnAndCapture({exe_, "--help"});
    if (!help || help->find("\n  tool ") == std::string::npos)
      return Error(ErrorCode::kUnsupported,
                   "this corral has no `tool` command (the tool layer is not built in)");
    char tmpl[] = "/tmp/corral-bench-tool.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Error::FromErrno(errno, "mkdtemp");
    base_dir_ = tmpl;
    return Ok();
  }
  void Cleanup() override {
    if (base_dir_.empty()) return;
    auto list =
        SpawnAndCapture({exe_, "threads", "--provider", "jail", "--base-dir", base_dir_, "--json"});
    if (list) {
      auto threads = nlohmann::json::parse(*list, nullptr, false);
      if (threads.is_array()) {
        for (const auto& t : threads) {
          if (t.contains("sandbox") && t["sandbox"].is_string())
            (void)SpawnAndWait({exe_, "rm", t["sandbox"].get<std::string>()});
        }
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(base_dir_, ec);
    base_dir_.clear();
  }
  Status Launch(const Workload& w) override {
    const std::string args = nlohmann::json{{"command", w.shell}}.dump();
    ASSIGN_OR_RETURN(std::string out,
                     SpawnAndCapture({exe_, "tool", "bash", "--provider", "jail", "--base-dir",
                                      base_dir_, "--thread", "bench", "--args", args}));
    // The tool reports its own failures as text, the way agents receive them.
    if (out.rfind("Error:", 0) == 0) return Error(ErrorCode::kIo, "tool bash: " + out);
    return Ok();
  }

 private:
  std::string exe_;
  std::string base_dir_;
};

}  // namespace

std::vector<std::unique_ptr<Launcher>> MakeCorralRungs(const std::string& corral_exe) {
  std::vector<std::unique_ptr<Launcher>> out;
  out.push_back(std::make_unique<CorralRunLauncher>(corral_exe));
  out.push_back(std::make_unique<CorralPoolRunLauncher>(corral_exe));
  out.push_back(std::make_unique<CorralContainerRunLauncher>(corral_exe, "crun"));
  out.push_back(std::make_unique<CorralContainerRunLauncher>(corral_exe, "runc"));
  out.push_back(std::make_unique<RunJailLauncher>());
  out.push_back(std::make_unique<JailPoolLauncher>());
  out.push_back(std::make_unique<CorralExecLauncher>(corral_exe));
  out.push_back(std::make_unique<CorralPoolExecLauncher>(corral_exe));
  out.push_back(std::make_unique<ToolBashLauncher>(corral_exe));
  return out;
}

}  // namespace corral::bench
