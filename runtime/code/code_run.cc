#include "runtime/code/code_run.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "runtime/code/code_payload.h"
#include "runtime/oci/container_run.h"
#include "runtime/run/supervisor.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/config.h"

namespace corral::runtime::code {
namespace {

// A read-only view of `payload` for the interpreter's stdin: a memfd, sealed so that
// nothing (not the jail, which gets it as fd 0) can change it once written.
Result<UniqueFd> PayloadFd(const std::string& payload) {
  UniqueFd fd(::memfd_create("corral-code", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return Error::FromErrno(errno, "memfd_create for the code payload");
  size_t done = 0;
  while (done < payload.size()) {
    ssize_t n = ::write(fd.get(), payload.data() + done, payload.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno(errno, "write the code payload");
    done += static_cast<size_t>(n);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
      0) {
    return Error::FromErrno(errno, "seal the code payload");
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return Error::FromErrno(errno, "rewind the payload");
  return fd;
}

}  // namespace

Result<CodeResult> RunCode(const JailSpec& spec, const CodeRequest& request) {
  if (request.lang != "python") {
    return Error(ErrorCode::kInvalidArgument,
                 "lang: only python is supported (got \"" + request.lang + "\")");
  }
  RETURN_IF_ERROR(CheckCode(request.code));
  ASSIGN_OR_RETURN(std::string dir, FindPythonDir());
  ASSIGN_OR_RETURN(auto modules, ReadCorralModules(dir));
  const std::string nonce = NewNonce();
  ASSIGN_OR_RETURN(UniqueFd stdin_fd,
                   PayloadFd(BuildPayload(request.code, request.policy, nonce, modules)));

  RunOptions io;
  io.capture_output = true;
  io.pass_stdin = true;
  io.stdin_fd = stdin_fd.get();
  RunOutcome outcome;
  if (request.sandbox.empty()) {
    JailSpec jail = spec;
    jail.argv = RunnerArgv(request.policy.interpreter);
    if (spec.mode == RunMode::kContainer) {
      ASSIGN_OR_RETURN(outcome, oci::RunContainer(jail, io));
    } else {
      ASSIGN_OR_RETURN(outcome, RunJail(jail, io));
    }
  } else {
    // The sandbox already exists as corral's own jail: its mode is process.
    RETURN_IF_ERROR(RequireProcessMode(spec, "--sandbox (a persistent sandbox)"));
    ExecRequest exec;
    exec.sandbox = request.sandbox;
    exec.argv = RunnerArgv(request.policy.interpreter);
    exec.timeout_seconds = request.timeout_seconds;
    exec.io = io;
    ASSIGN_OR_RETURN(outcome, ExecInSandbox(exec));
  }
  return InterpretOutcome(std::move(outcome), nonce, std::string(Name(request.policy.scan.mode)));
}

}  // namespace corral::runtime::code
