// Spawn(): clone a jail child from a finished JailPlan.
//
// The child (jail/child.cc) becomes PID 1 of the new PID namespace: a tiny init that
// builds the root, forks the command (PID 2), hardens itself, and reaps. The command runs
// the hardening pipeline and execs. The parent gets a JailProcess with three channels:
//   pidfd      - readable when the init exits
//   setup_fd   - one SetupRecord if a setup step failed, EOF once the command exec'd
//   status_fd  - one InitReport with the command's wait status, sent by the init
// Runs in the parent; must be called from a single-threaded process, or a thread that
// holds no locks the child could need (the child only makes syscalls, so in practice:
// any thread, but see docs/architecture.md on spawner processes for the daemon).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "jail/plan.h"
#include "jail/setup_record.h"

namespace corral::jail {

struct SpawnRequest {
  const JailPlan* plan = nullptr;
  // dup2()ed onto the command's 0/1/2.
  int stdin_fd = 0;
  int stdout_fd = 1;
  int stderr_fd = 2;
  int cgroup_fd = -1;                  // v2: clone3(CLONE_INTO_CGROUP) into this cgroup
  std::vector<int> cgroup_attach_fds;  // the child writes "0" into each (v1)
  // Persistent mode: an O_PATH fd of the small corral-init program, which the child
  // execs as PID 1 once hardened. -1: the child itself stays on as the init.
  int init_exe_fd = -1;
  // CLONE_PARENT: the jail becomes a child of our parent, not ours (a spawner process
  // cloning on its owner's behalf, runtime/run/jail_spawner.h).
  bool clone_parent = false;
};

// What the init sends when the command ends.
struct InitReport {
  int32_t wait_status;  // as from waitpid()
  int32_t reserved;
};

// Owner of a running jail's init. Destroying it SIGKILLs and reaps the init (which takes
// the whole PID namespace down), unless it was already reaped.
class JailProcess {
 public:
  JailProcess() = default;
  JailProcess(pid_t pid, UniqueFd pidfd, UniqueFd setup_fd, UniqueFd status_fd);
  ~JailProcess();
  JailProcess(JailProcess&& other) noexcept;
  JailProcess& operator=(JailProcess&& other) noexcept;

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }
  int setup_fd() const { return setup_fd_.get(); }
  int status_fd() const { return status_fd_.get(); }

  // Reads the setup result (see ReadSetupResult) and closes the setup channel.
  Result<std::optional<SetupFailure>> AwaitSetup(int timeout_ms);
  // A prepared jail (plan.deferred_command): hands it its command and stdio.
  Status SendCommand(const std::string& encoded, int stdin_fd, int stdout_fd, int stderr_fd);
  // Non-blocking: the InitReport if the init sent one.
  std::optional<InitReport> TakeReport();
  // Sends a signal to the init (SIGKILL ends the whole PID namespace).
  void Kill(int sig);
  // Blocks until the init exits; returns its wait status and resource usage of the whole
  // reaped tree. Only once.
  Result<int> Reap(struct rusage* usage);
  bool reaped() const { return pid_ <= 0; }
  // Gives up ownership: the process keeps running and is no longer killed or reaped here
  // (a persistent sandbox's init outlives the corral that created it).
  pid_t Release();

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd setup_fd_;
  UniqueFd status_fd_;
};

Result<JailProcess> Spawn(const SpawnRequest& request);

}  // namespace corral::jail
