// A jail's command delivered after the jail is built: how a prepared (pooled) jail learns
// what to run. The parent encodes argv, envp, PATH directories and the working directory
// into one message and sends it, with the command's stdin/stdout/stderr as SCM_RIGHTS,
// over the status socket (jail/spawn.h); the jail's init receives it into static buffers
// (no allocation: the child runs syscalls only), then forks the command.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"

namespace corral::jail {

// What HardenAndExec runs: NULL-terminated arrays and C strings owned by someone else.
struct CommandView {
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* const* path_dirs = nullptr;  // searched when argv[0] has no '/'
  const char* workdir = "/";
  // One-shot init: after reporting the command's status, wait to be SIGKILLed (or for the
  // parent to hang up) instead of exiting. The parent then answers first and the init's
  // exit (its namespaces, its copy of the parent's memory) does not compete with it for
  // the CPU; the parent kills it right after the report (runtime/run/supervisor.cc).
  bool hold_after_report = false;
};

// Limits of a deferred command; a larger one must be run in a jail planned for it.
constexpr size_t kMaxDeferredCommandBytes = 128 * 1024;
constexpr size_t kMaxDeferredStrings = 4096;  // per array

struct DeferredCommand {
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  std::vector<std::string> path_dirs;
  std::string workdir = "/";
  bool hold_after_report = false;  // see CommandView
};

// Parent side. kInvalidArgument if the command exceeds the limits above.
Result<std::string> EncodeCommand(const DeferredCommand& command);
// Parent side: sends the encoded command and the three stdio fds on `socket_fd`.
Status SendCommand(int socket_fd, const std::string& encoded, int stdin_fd, int stdout_fd,
                   int stderr_fd);

// Child side: blocks until the command arrives. Fills *view (pointing into static
// storage, valid until exec) and fds[0..2]. False on EOF (the parent gave the jail up) or
// a malformed message.
bool ReceiveCommand(int socket_fd, CommandView* view, int fds[3]);

}  // namespace corral::jail
