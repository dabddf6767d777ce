// The processes corral forks to drive an OCI runtime (crun, runc) in `mode: container`:
// short runtime commands (kill, delete) and the keeper that runs `RT run --detach` and
// waits for the container's init (container_run.h, step 2). Internal to runtime/oci.
// Parent side, except what the comments call a child's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/oci/oci_runtime.h"

namespace corral::runtime::oci {

// argv prepared before fork: the children only exec it.
struct Argv {
  explicit Argv(std::vector<std::string> args);
  std::vector<std::string> storage;
  std::vector<char*> pointers;
};

// One short runtime command (kill, delete): its exit status, or -1 when it could not be
// started; its stderr into *err_text (up to 64 KiB).
int RuntimeCommand(const OciRuntime& rt, const std::vector<std::string>& args,
                   std::string* err_text = nullptr);

// What the keeper tells corral: one record, 8 bytes.
enum KeeperKind : int32_t {
  kExited = 0,         // value: the container init's wait status
  kRuntimeFailed = 1,  // value: the runtime's own wait status (`run` failed)
  kKeeperFailed = 2,   // value: an errno
};
struct KeeperRecord {
  int32_t kind;
  int32_t value;
};

// The command's stdio and descriptors as the keeper hands them to the runtime.
struct KeeperFds {
  int in, out, err;
  int init_report;  // corral-init's report pipe, the container's fd 3
  int report;       // where the keeper writes its KeeperRecord
};

// The keeper, in a forked child (async-signal-safe only: corral may have threads). Runs
// `run` (the runtime's argv) with the command's stdio, becomes the subreaper of the
// container's init (its pid from `pid_file`) and reports its wait status; never returns.
[[noreturn]] void Keeper(const OciRuntime& rt, const Argv& run, const char* pid_file,
                         const KeeperFds& fds);

}  // namespace corral::runtime::oci
