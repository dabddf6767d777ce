// corral-runc's verbs: what runc's command line does, with corral's jail (runc_plan.h) and
// record (runc_state.h). The command line itself is cli/runc_main.cc; this is the part a
// test can call without it. Parent side; each verb is one short-lived process, as with
// runc: `create` leaves the container's process waiting at its start gate and exits, so
// that the caller (containerd's shim, conmon), a child subreaper, inherits and reaps it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/oci/runc_state.h"

namespace corral::runtime::oci {

struct GlobalOptions {
  std::string root = kDefaultRuncRoot;
  bool systemd_cgroup = false;
};

struct CreateOptions {
  std::string id;
  std::string bundle = ".";
  std::string pid_file;        // the container process's pid, written whole
  std::string console_socket;  // with process.terminal: where the pty master goes
  int preserve_fds = 0;        // fds 3..3+N-1 passed on to the process
};

// Builds the container and leaves its process at the start gate. Lines of what was done
// in corral's own way (runc_plan.h notes) go to *notes, for the log.
Status CreateContainer(const GlobalOptions& global, const CreateOptions& options,
                       std::vector<std::string>* notes);
// Opens the start gate; fails with the reason if the process could not exec.
Status StartContainer(const GlobalOptions& global, const std::string& id);
// `runc run`: create + start, then waits for the process and returns its exit code.
Result<int> RunContainer(const GlobalOptions& global, const CreateOptions& options,
                         std::vector<std::string>* notes);
// Signals the process (all of the container's processes with `all`).
Status KillContainer(const GlobalOptions& global, const std::string& id, int signal, bool all);
// Removes a stopped container (any, killing it first, with `force`): cgroup, record.
Status DeleteContainer(const GlobalOptions& global, const std::string& id, bool force);
Result<std::string> ContainerStateJson(const GlobalOptions& global, const std::string& id);
Status PauseContainer(const GlobalOptions& global, const std::string& id, bool pause);
// The pids of every process in the container's cgroup.
Result<std::vector<pid_t>> ContainerPids(const GlobalOptions& global, const std::string& id);
// The ids under the root, with their state JSON.
Result<std::vector<std::string>> ListContainers(const GlobalOptions& global);

struct ExecOptions {
  std::string id;
  std::string process_file;       // --process: an OCI process object (JSON)
  std::vector<std::string> args;  // without --process: the command ...
  std::vector<std::string> env;   // ... added to the container's environment
  std::string cwd;
  bool tty = false;
  bool detach = false;
  std::string pid_file;
  std::string console_socket;
  int preserve_fds = 0;
};
// Starts a process in the running container. Detached: returns 0 once it has exec'd (the
// caller, a subreaper, inherits it). Else waits and returns its exit code (128+signal).
Result<int> ExecInContainer(const GlobalOptions& global, const ExecOptions& options);

// `update --resources`: linux.resources JSON (checked as in a config) applied to the
// running container's cgroup; what corral's drivers cannot set goes to *notes.
Status UpdateContainer(const GlobalOptions& global, const std::string& id,
                       const std::string& resources_json, std::vector<std::string>* notes);
// `events --stats`: one runc "stats" event (cpu, memory, pids) as a JSON line.
Result<std::string> ContainerStatsEvent(const GlobalOptions& global, const std::string& id);

// Shared by the verbs (runc_container.cc): a connected unix socket (long paths reached
// through their directory), and the container's cgroup opened without owning it.
Result<UniqueFd> ConnectUnixSocket(const std::string& path);
Result<std::unique_ptr<cgroups::Cgroup>> OpenRecordCgroup(const ContainerRecord& record);

// "TERM", "SIGTERM", "15" -> 15; kInvalidArgument otherwise.
Result<int> ParseSignal(const std::string& text);

}  // namespace corral::runtime::oci
