#include "runtime/oci/runc_container.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/files.h"
#include "base/scope_guard.h"
#include "jail/spawn.h"
#include "runtime/oci/bundle_config.h"
#include "runtime/oci/runc_plan.h"

namespace corral::runtime::oci {

namespace {

// A unix socket path may be longer than sun_path holds (containerd's state paths are):
// reach it through an fd of its directory, /proc/self/fd/N/NAME.
struct ShortSocketPath {
  UniqueFd dir;
  std::string path;
};

Result<ShortSocketPath> ShortenSocketPath(const std::string& socket_path) {
  ShortSocketPath out;
  if (socket_path.size() < sizeof(sockaddr_un::sun_path)) {
    out.path = socket_path;
    return out;
  }
  const std::filesystem::path p(socket_path);
  out.dir = UniqueFd(::open(p.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!out.dir) return Error::FromErrno(errno, p.parent_path().string());
  out.path = "/proc/self/fd/" + std::to_string(out.dir.get()) + "/" + p.filename().string();
  return out;
}

Result<UniqueFd> UnixSocket(const std::string& path, bool listen_on_it) {
  ASSIGN_OR_RETURN(ShortSocketPath short_path, ShortenSocketPath(path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Error::FromErrno(errno, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (short_path.path.size() >= sizeof addr.sun_path) {
    return Error(ErrorCode::kInvalidArgument, "socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, short_path.path.c_str(), short_path.path.size() + 1);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (listen_on_it) {
    if (::bind(fd.get(), sa, sizeof addr) != 0 || ::listen(fd.get(), 1) != 0) {
      return Error::FromErrno(errno, "listen on " + path);
    }
  } else if (::connect(fd.get(), sa, sizeof addr) != 0) {
    return Error::FromErrno(errno, "connect to " + path);
  }
  return fd;
}

std::string NowRfc3339() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto secs = time_point_cast<seconds>(now);
  const long nanos = static_cast<long>(duration_cast<nanoseconds>(now - secs).count());
  const std::time_t t = system_clock::to_time_t(secs);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%09ldZ", buf, nanos);
  return out;
}

// What the config's "cgroup" mount shows on a v1 host: the container's directory in each
// controller hierarchy, named as the hierarchy is mounted ("memory", "cpu,cpuacct").
std::vector<std::pair<std::string, std::string>> V1CgroupDirs(const cgroups::Cgroup& cgroup,
                                                              const std::string& cgroupfs_path) {
  std::vector<std::pair<std::string, std::string>> dirs;
  for (const std::string& dir : cgroup.paths()) {
    if (!dir.ends_with(cgroupfs_path)) continue;
    const std::string mount = dir.substr(0, dir.size() - cgroupfs_path.size());
    dirs.emplace_back(std::filesystem::path(mount).filename().string(), dir);
  }
  return dirs;
}

Result<std::unique_ptr<cgroups::Cgroup>> MakeContainerCgroup(const ContainerCgroupRef& ref,
                                                             const std::string& cgroupfs_path,
                                                             const cgroups::Limits& limits) {
  // A cgroup that exists already (made by the caller for this container) is joined.
  Result<std::unique_ptr<cgroups::Cgroup>> cgroup = ref.manager->CreateCgroup(ref.name);
  if (!cgroup && cgroup.error().code() == ErrorCode::kAlreadyExists) {
    cgroup = ref.manager->OpenCgroup(ref.name);
  }
  if (!cgroup) return cgroup.error().WithContext("linux.cgroupsPath " + cgroupfs_path);
  ASSIGN_OR_RETURN(auto warnings, (*cgroup)->ApplyLimits(limits, false));
  (void)warnings;
  return std::move(*cgroup);
}

Status WritePidFile(const std::string& path, pid_t pid) {
  if (path.empty()) return Ok();
  return WriteFileWhole(path, std::to_string(pid), 0644);
}

// Spawns the planned jail in `cgroup` and waits until it is built (or failed).
Result<pid_t> SpawnContainer(ContainerPlan& plan, cgroups::Cgroup& cgroup) {
  // A PID namespace is entered by children only: ours, the clone below.
  if (plan.pid_namespace && ::setns(plan.pid_namespace.get(), CLONE_NEWPID) != 0) {
    return Error::FromErrno(errno, "config.json: linux.namespaces: join the pid namespace");
  }
  jail::SpawnRequest request;
  request.plan = &plan.jail;
  request.cgroup_fd = cgroup.clone_into_fd();
  request.cgroup_attach_fds = cgroup.attach_fds();
  ASSIGN_OR_RETURN(jail::JailProcess process, jail::Spawn(request));
  ASSIGN_OR_RETURN(auto failure, process.AwaitSetup(60 * 1000));
  if (failure) return Error(ErrorCode::kSetupFailed, failure->ToString());
  return process.Release();
}

Result<ContainerRecord> CreateRecordAndContainer(const GlobalOptions& global,
                                                 const CreateOptions& options,
                                                 const std::string& dir,
                                                 std::vector<std::string>* notes) {
  ASSIGN_OR_RETURN(BundleConfig config, LoadBundleConfig(options.bundle));
  if (config.process.terminal != !options.console_socket.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 config.process.terminal
                     ? "config.json: process.terminal is true but no --console-socket was given"
                     : "--console-socket given but config.json's process.terminal is false");
  }
  ASSIGN_OR_RETURN(std::string cgroupfs_path,
                   CgroupfsPath(config.cgroups_path, global.systemd_cgroup, options.id));
  // The cgroup first: the plan's "cgroup" mount shows its directories. What its limits
  // leave unapplied is in the plan's notes.
  ASSIGN_OR_RETURN(ContainerCgroupRef ref, ContainerCgroupManager(cgroupfs_path));
  std::vector<std::string> unapplied;
  ASSIGN_OR_RETURN(
      auto cgroup,
      MakeContainerCgroup(ref, cgroupfs_path, ResourcesToLimits(config.resources, &unapplied)));
  ContainerPlanOptions plan_options;
  plan_options.cgroup_v2 = ref.manager->driver() == cgroups::Driver::kV2;
  auto cgroup_guard = ScopeGuard([&] { (void)cgroup->Destroy(); });
  if (!plan_options.cgroup_v2) plan_options.v1_cgroup_dirs = V1CgroupDirs(*cgroup, cgroupfs_path);
  ASSIGN_OR_RETURN(ContainerPlan plan, PlanContainer(config, plan_options));
  notes->insert(notes->end(), plan.notes.begin(), plan.notes.end());
  for (const std::string& what : unapplied) notes->push_back(what + ": not applied");
  plan.jail.preserve_fds = options.preserve_fds;
  ASSIGN_OR_RETURN(UniqueFd gate, UnixSocket(dir + "/" + kStartGateName, true));
  plan.jail.start_gate_fd = gate.get();
  UniqueFd console;
  if (!options.console_socket.empty()) {
    ASSIGN_OR_RETURN(console, ConnectUnixSocket(options.console_socket));
    plan.jail.console_socket_fd = console.get();
  }
  ASSIGN_OR_RETURN(pid_t pid, SpawnContainer(plan, *cgroup));
  if (config.process.oom_score_adj) {
    (void)WriteFile("/proc/" + std::to_string(pid) + "/oom_score_adj",
                    std::to_string(*config.process.oom_score_adj));
  }
  cgroup->Release();
  cgroup_guard.Dismiss();
  ContainerRecord record;
  record.id = options.id;
  record.pid = pid;
  record.pid_start_time = ProcessStartTime(pid);
  record.bundle = config.bundle_dir;
  record.rootfs = config.root_path;
  record.created = NowRfc3339();
  record.cgroups_path = cgroupfs_path;
  record.annotations = config.annotations;
  return record;
}

}  // namespace

Result<UniqueFd> ConnectUnixSocket(const std::string& path) { return UnixSocket(path, false); }

Result<std::unique_ptr<cgroups::Cgroup>> OpenRecordCgroup(const ContainerRecord& record) {
  ASSIGN_OR_RETURN(ContainerCgroupRef ref, ContainerCgroupManager(record.cgroups_path));
  ASSIGN_OR_RETURN(auto cgroup, ref.manager->OpenCgroup(ref.name));
  cgroup->Release();  // a handle to look through, not to remove on the way out
  return cgroup;
}

Status CreateContainer(const GlobalOptions& global, const CreateOptions& options,
                       std::vector<std::string>* notes) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(UniqueFd lock, store.CreateDir(options.id));
  auto remove_dir = ScopeGuard([&] { (void)store.Remove(options.id); });
  ASSIGN_OR_RETURN(ContainerRecord record,
                   CreateRecordAndContainer(global, options, store.Dir(options.id), notes));
  Status saved = store.Save(record);
  if (saved.has_value()) saved = WritePidFile(options.pid_file, record.pid);
  if (!saved.has_value()) {
    ::kill(record.pid, SIGKILL);
    return saved;
  }
  remove_dir.Dismiss();
  return Ok();
}

Status StartContainer(const GlobalOptions& global, const std::string& id) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(UniqueFd lock, store.Lock(id));
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  const ContainerStatus status = ReadStatus(record, nullptr);
  if (status != ContainerStatus::kCreated) {
    return Error(ErrorCode::kFailedPrecondition,
                 std::string("cannot start a container that is ") + ContainerStatusName(status));
  }
  const std::string gate_path = store.Dir(id) + "/" + kStartGateName;
  ASSIGN_OR_RETURN(UniqueFd gate, ConnectUnixSocket(gate_path));
  ::unlink(gate_path.c_str());
  record.started = true;
  RETURN_IF_ERROR(store.Save(record));
  // EOF: the process exec'd (its end of this connection was close-on-exec).
  ASSIGN_OR_RETURN(auto failure, jail::ReadSetupResult(gate.get(), 60 * 1000));
  if (failure) return Error(ErrorCode::kSetupFailed, failure->ToString());
  return Ok();
}

Status KillContainer(const GlobalOptions& global, const std::string& id, int signal, bool all) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(UniqueFd lock, store.Lock(id));
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  if (all) {
    ASSIGN_OR_RETURN(auto cgroup, OpenRecordCgroup(record));
    return cgroup->SignalAll(signal);
  }
  if (ReadStatus(record, nullptr) == ContainerStatus::kStopped) {
    return Error(ErrorCode::kFailedPrecondition, "container not running");
  }
  if (::kill(record.pid, signal) != 0) return Error::FromErrno(errno, "kill");
  return Ok();
}

Status DeleteContainer(const GlobalOptions& global, const std::string& id, bool force) {
  ContainerStore store(global.root);
  Result<UniqueFd> lock = store.Lock(id);
  // As runc: --force on a container that is not there (or whose create died before its
  // record was written) removes what directory there is and succeeds.
  if (!lock && lock.error().code() == ErrorCode::kNotFound && force) {
    RETURN_IF_ERROR(CheckContainerId(id));
    return store.Remove(id);
  }
  if (!lock) return lock.error();
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  Result<std::unique_ptr<cgroups::Cgroup>> cgroup = OpenRecordCgroup(record);
  const ContainerStatus status = ReadStatus(record, cgroup ? cgroup->get() : nullptr);
  if (status != ContainerStatus::kStopped && !force) {
    return Error(ErrorCode::kFailedPrecondition,
                 std::string("cannot delete container ") + id +
                     " that is not stopped: " + ContainerStatusName(status) + " (use --force)");
  }
  if (cgroup) {
    if (status == ContainerStatus::kPaused) (void)(*cgroup)->SetFrozen(false);
    RETURN_IF_ERROR((*cgroup)->KillAll());
    RETURN_IF_ERROR((*cgroup)->Destroy());
  } else if (cgroup.error().code() != ErrorCode::kNotFound) {
    return cgroup.error();
  }
  return store.Remove(id);
}

Result<std::string> ContainerStateJson(const GlobalOptions& global, const std::string& id) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(UniqueFd lock, store.Lock(id));
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  Result<std::unique_ptr<cgroups::Cgroup>> cgroup = OpenRecordCgroup(record);
  return StateJson(record, ReadStatus(record, cgroup ? cgroup->get() : nullptr));
}

Status PauseContainer(const GlobalOptions& global, const std::string& id, bool pause) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(UniqueFd lock, store.Lock(id));
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  ASSIGN_OR_RETURN(auto cgroup, OpenRecordCgroup(record));
  const ContainerStatus status = ReadStatus(record, cgroup.get());
  if (status == ContainerStatus::kStopped || status == ContainerStatus::kCreated) {
    return Error(ErrorCode::kFailedPrecondition,
                 std::string("container not running: ") + ContainerStatusName(status));
  }
  return cgroup->SetFrozen(pause);
}

Result<std::vector<pid_t>> ContainerPids(const GlobalOptions& global, const std::string& id) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(UniqueFd lock, store.Lock(id));
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  ASSIGN_OR_RETURN(auto cgroup, OpenRecordCgroup(record));
  return cgroup->Processes();
}

Result<std::vector<std::string>> ListContainers(const GlobalOptions& global) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(global.root, ec)) {
    if (entry.is_directory()) ids.push_back(entry.path().filename().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<int> RunContainer(const GlobalOptions& global, const CreateOptions& options,
                         std::vector<std::string>* notes) {
  // The container's process must be our child to be waited for.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    return Error::FromErrno(errno, "PR_SET_CHILD_SUBREAPER");
  }
  RETURN_IF_ERROR(CreateContainer(global, options, notes));
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(options.id));
  Status started = StartContainer(global, options.id);
  int status = 0;
  const bool waited = ::waitpid(record.pid, &status, 0) == record.pid;
  const int wait_errno = errno;
  Status deleted = DeleteContainer(global, options.id, true);
  RETURN_IF_ERROR(started);
  if (!waited) return Error::FromErrno(wait_errno, "waitpid");
  RETURN_IF_ERROR(deleted);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Result<int> ParseSignal(const std::string& text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), ::isdigit)) {
    int sig = std::atoi(text.c_str());
    if (sig > 0 && sig < NSIG) return sig;
  } else {
    std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
    for (int sig = 1; sig < NSIG; ++sig) {
      const char* abbrev = sigabbrev_np(sig);
      if (abbrev != nullptr && name == abbrev) return sig;
    }
  }
  return Error(ErrorCode::kInvalidArgument, "unknown signal \"" + text + "\"");
}

}  // namespace corral::runtime::oci
