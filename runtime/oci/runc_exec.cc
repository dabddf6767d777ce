// `corral-runc exec`: a process in a running container's namespaces, cgroup and seccomp
// filter, with the identity its process.json (or the command line) gives (runc_container.h).
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/json_input.h"
#include "jail/enter.h"
#include "runtime/oci/bundle_config.h"
#include "runtime/oci/runc_container.h"
#include "runtime/oci/runc_plan.h"

namespace corral::runtime::oci {

namespace {

// process.json, checked by the same parser as the config's own `process`.
Result<OciProcess> LoadExecProcess(const BundleConfig& config, const ExecOptions& options) {
  nlohmann::json process;
  if (!options.process_file.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(options.process_file));
    auto parsed = ParseJsonInputOrError(text);
    if (!parsed) {
      return Error(ErrorCode::kInvalidArgument,
                   options.process_file + ": invalid JSON: " + parsed.error().message());
    }
    process = std::move(*parsed);
  } else {
    if (options.args.empty()) {
      return Error(ErrorCode::kInvalidArgument, "exec needs --process or a command");
    }
    process = {{"args", options.args},
               {"cwd", options.cwd.empty() ? config.process.cwd : options.cwd},
               {"terminal", options.tty},
               {"env", config.process.env},
               {"user", {{"uid", config.process.user.uid}, {"gid", config.process.user.gid}}}};
    for (const std::string& env : options.env) process["env"].push_back(env);
  }
  Result<OciProcess> parsed = ParseOciProcess(process, "process");
  if (!parsed) {
    return parsed.error().WithContext(options.process_file.empty() ? "exec" : options.process_file);
  }
  OciProcess result = std::move(*parsed);
  if (options.process_file.empty()) {
    result.capabilities = config.process.capabilities;
    result.rlimits = config.process.rlimits;
    result.no_new_privileges = config.process.no_new_privileges;
  }
  return result;
}

// Every namespace the container has, new or joined: its process is in all of them.
unsigned ContainerNamespaceFlags(const BundleConfig& config) {
  unsigned flags = CLONE_NEWNS;
  for (const OciNamespace& ns : config.namespaces) {
    flags |= static_cast<unsigned>(NamespaceCloneFlag(ns.type));
  }
  return flags;
}

}  // namespace

Result<int> ExecInContainer(const GlobalOptions& global, const ExecOptions& options) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(options.id));
  ASSIGN_OR_RETURN(auto cgroup, OpenRecordCgroup(record));
  const ContainerStatus status = ReadStatus(record, cgroup.get());
  if (status != ContainerStatus::kRunning) {
    return Error(ErrorCode::kFailedPrecondition,
                 std::string("cannot exec in a container that is ") + ContainerStatusName(status));
  }
  ASSIGN_OR_RETURN(BundleConfig config, LoadBundleConfig(record.bundle));
  ASSIGN_OR_RETURN(config.process, LoadExecProcess(config, options));
  if (config.process.terminal != !options.console_socket.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 config.process.terminal ? "process.terminal is true but no --console-socket"
                                         : "--console-socket given but process.terminal is false");
  }
  ContainerPlan plan;
  plan.jail.die_with_parent = false;
  plan.jail.preserve_fds = options.preserve_fds;
  RETURN_IF_ERROR(PlanProcess(config, &plan));
  UniqueFd console;
  if (!options.console_socket.empty()) {
    ASSIGN_OR_RETURN(console, ConnectUnixSocket(options.console_socket));
    plan.jail.console_socket_fd = console.get();
  }
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, record.pid, 0)));
  if (!pidfd) return Error::FromErrno(errno, "pidfd_open of the container's process");
  const std::string root_path = "/proc/" + std::to_string(record.pid) + "/root";
  UniqueFd root(::open(root_path.c_str(), O_PATH | O_CLOEXEC));
  if (!root) return Error::FromErrno(errno, root_path);
  jail::EnterRequest request;
  request.plan = &plan.jail;
  request.init_pidfd = pidfd.get();
  request.init_root_fd = root.get();
  request.ns_flags = ContainerNamespaceFlags(config);
  request.cgroup_fd = cgroup->clone_into_fd();
  request.cgroup_attach_fds = cgroup->attach_fds();
  ASSIGN_OR_RETURN(jail::JailProcess process, jail::SpawnInto(request));
  ASSIGN_OR_RETURN(auto failure, process.AwaitSetup(60 * 1000));
  if (failure) return Error(ErrorCode::kSetupFailed, failure->ToString());
  if (!options.pid_file.empty()) {
    RETURN_IF_ERROR(WriteFileWhole(options.pid_file, std::to_string(process.pid()), 0644));
  }
  if (options.detach) {
    process.Release();
    return 0;
  }
  ASSIGN_OR_RETURN(int wait_status, process.Reap(nullptr));
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

}  // namespace corral::runtime::oci
