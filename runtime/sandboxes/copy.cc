#include "runtime/sandboxes/copy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd_pair.h"
#include "base/unique_fd.h"
#include "runtime/sandboxes/copy_host.h"
#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {

namespace {

using copy_internal::StartHostTar;
using copy_internal::WaitHostTar;

// The sandbox's side is a short sh script run by an exec, with the paths as arguments
// (never in the script text). Its own failures are exit codes, worded by Explain().
enum ScriptExit {
  kMissing = 3,       // the source does not exist
  kNotDir = 4,        // a path that must be a directory is not (or does not exist)
  kNoAccess = 5,      // the sandbox user may not go there (sh said why)
  kDirOntoFile = 6,   // a directory cannot replace a file
  kUnpackFailed = 7,  // tar or the move into place failed (they said why); nothing was left
  kFull = 8,          // the destination's filesystem filled up; nothing was left
};

// $1 directory, $2 entry ("." for the directory's contents), $3 "d" if $2 must be a dir.
constexpr char kPackScript[] =
    "[ -d \"$1\" ] || exit 3\n"
    "cd \"$1\" || exit 5\n"
    "if [ \"$2\" != . ]; then [ -e \"$2\" ] || [ -L \"$2\" ] || exit 3; fi\n"
    "if [ \"$3\" = d ] && [ ! -d \"$2\" ]; then exit 4; fi\n"
    "exec tar -c -f - -- \"$2\"\n";

// Shared by the unpack scripts, so that a copy in is all or nothing:
//   full DIR   DIR's filesystem has (next to) no room left;
//   u DIR      extracts the tar stream on stdin into a new temporary directory in DIR
//              (its name in $t); on failure removes it and exits 8 (full) or 7;
//   m SRC DST  moves SRC's entries into the directory DST by rename, merging directories
//              as tar does and replacing files, without touching DST's own mode or times
//              (tar would chmod an existing directory such as /tmp, which the sandbox user
//              does not own, and fail after copying everything).
constexpr char kUnpackFunctions[] =
    "full() { [ \"$(df -Pk \"$1\" 2>/dev/null | awk 'NR==2 {print ($4 < 64)}')\" = 1 ]; }\n"
    "u() { t=$(mktemp -d \"$1/.corral-cp-XXXXXX\") || exit 5\n"
    "  (cd \"$t\" && tar -x -f - --no-same-owner --no-overwrite-dir) && return 0\n"
    "  full \"$1\"; f=$?; rm -rf \"$t\"; [ $f = 0 ] && exit 8; exit 7; }\n"
    "m() { local e d\n"
    "  for e in \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*; do\n"
    "    [ -e \"$e\" ] || [ -L \"$e\" ] || continue\n"
    "    d=\"$2/${e##*/}\"\n"
    "    if [ -d \"$e\" ] && [ ! -L \"$e\" ] && [ -d \"$d\" ] && [ ! -L \"$d\" ]; then\n"
    "      m \"$e\" \"$d\" || return 1\n"
    "    else mv -f -T \"$e\" \"$d\" || return 1; fi\n"
    "  done; }\n"
    "x() { u \"$1\"; m \"$t\" \"$1\"; s=$?; rm -rf \"$t\"; [ $s = 0 ] || exit 7; exit 0; }\n";

// A tar stream on stdin, extracted into the existing directory $1.
constexpr char kUnpackStreamScript[] =
    "[ -d \"$1\" ] || exit 4\n"
    "x \"$1\"\n";

// $1 destination, $2 its directory, $3 its name, $4 the archive's entry ("." for a
// directory's contents), $5 "d" when that is a directory, $6 "1" when $1 ended in '/'.
// Into $1 when it is a directory; else as $1, through a temporary directory beside it.
constexpr char kUnpackScript[] =
    "if [ -d \"$1\" ]; then x \"$1\"; fi\n"
    "[ \"$6\" = 1 ] && exit 4\n"
    "if [ -e \"$1\" ] || [ -L \"$1\" ]; then [ \"$5\" = d ] && exit 6; fi\n"
    "[ -d \"$2\" ] || exit 4\n"
    "u \"$2\"\n"
    "if [ \"$4\" = . ]; then mv -T \"$t\" \"$2/$3\" || { rm -rf \"$t\"; exit 7; }; exit 0; fi\n"
    "mv -T \"$t/$4\" \"$2/$3\"; s=$?; rm -rf \"$t\"; [ $s = 0 ] || exit 7\n";

// Words a failed exec of one of the scripts. `shown` is NAME:PATH as the user typed it;
// `not_dir` what exit 4 means.
Status Explain(const RunOutcome& outcome, const std::string& shown, const std::string& not_dir) {
  if (outcome.status == RunStatus::kExited && outcome.exit_code == 0) return Ok();
  if (outcome.status == RunStatus::kSetupFailed && outcome.setup_error) {
    return Error(ErrorCode::kSetupFailed, shown + ": " + outcome.setup_error->ToString());
  }
  if (outcome.status == RunStatus::kTimedOut) {
    return Error(ErrorCode::kIo, shown + ": the copy hit the sandbox's timeout");
  }
  if (outcome.status != RunStatus::kExited) {
    return Error(ErrorCode::kIo,
                 shown + ": tar in the sandbox was killed (" + RunStatusName(outcome.status) + ")");
  }
  switch (outcome.exit_code) {
    case kMissing:
      return Error(ErrorCode::kNotFound, shown + ": no such file or directory in the sandbox");
    case kNotDir:
      return Error(ErrorCode::kNotFound, shown + ": " + not_dir);
    case kNoAccess:
      return Error(ErrorCode::kPermissionDenied,
                   shown + ": the sandbox user may not go there (see the message above)");
    case kDirOntoFile:
      return Error(ErrorCode::kAlreadyExists, shown + ": cannot copy a directory onto a file");
    case kFull:
      return Error(ErrorCode::kIo,
                   shown +
                       ": no room left in the sandbox, so nothing was copied (/tmp, /var/tmp, "
                       "/home/sandbox, /run and /dev/shm share one tmpfs of limits.tmp_size, "
                       "--tmp-size, default 256 MiB; a -v mount has its host disk's room)");
    case kUnpackFailed:
      return Error(ErrorCode::kIo,
                   shown +
                       ": unpacking in the sandbox failed (the message is above); nothing "
                       "was copied");
    case 126:
    case 127:
      return Error(ErrorCode::kUnsupported,
                   shown + ": corral cp needs /bin/sh and tar inside the sandbox");
    default:
      return Error(ErrorCode::kIo, shown + ": tar in the sandbox failed (exit " +
                                       std::to_string(outcome.exit_code) +
                                       "; its message is above)");
  }
}

Result<RunOutcome> ExecScript(const std::string& sandbox, std::string script,
                              std::vector<std::string> args, int stdin_fd, int stdout_fd) {
  ExecRequest exec;
  exec.sandbox = sandbox;
  exec.argv = {"/bin/sh", "-c", std::move(script), "corral-cp"};
  for (auto& a : args) exec.argv.push_back(std::move(a));
  exec.workdir = "/";
  if (stdin_fd >= 0) {
    exec.io.pass_stdin = true;
    exec.io.stdin_fd = stdin_fd;
  }
  if (stdout_fd >= 0) exec.io.stdout_fd = stdout_fd;
  return ExecInSandbox(exec);
}

Status CheckSandboxPath(const CopyRequest& request) {
  if (request.sandbox_path.empty() || request.sandbox_path[0] != '/') {
    return Error(ErrorCode::kInvalidArgument, request.sandbox + ":" + request.sandbox_path +
                                                  ": the path in the sandbox must be absolute");
  }
  return Ok();
}

}  // namespace

Result<CopyPath> SplitCopyPath(const std::string& path, const std::string& what) {
  if (path.empty()) return Error(ErrorCode::kInvalidArgument, what + ": empty path");
  if (path.find('\0') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, what + ": must not contain a NUL byte");
  }
  CopyPath p;
  std::string s = path;
  p.trailing_slash = s.size() > 1 && s.back() == '/';
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  if (s == "/") {  // the whole root: its contents
    p.dir = "/";
    p.base = ".";
    p.contents = true;
    return p;
  }
  size_t slash = s.rfind('/');
  p.dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : s.substr(0, slash));
  p.base = slash == std::string::npos ? s : s.substr(slash + 1);
  if (p.base == "..") {
    return Error(ErrorCode::kInvalidArgument, what + ": a path ending in '..' is not supported");
  }
  p.contents = p.base == ".";  // DIR/. : what is in DIR
  return p;
}

Status CopyFromSandbox(const CopyRequest& request) {
  RETURN_IF_ERROR(CheckSandboxPath(request));
  std::string shown = request.sandbox + ":" + request.sandbox_path;
  ASSIGN_OR_RETURN(CopyPath source, SplitCopyPath(request.sandbox_path, shown));
  auto pack = [&](int out_fd) -> Status {
    ASSIGN_OR_RETURN(
        RunOutcome outcome,
        ExecScript(request.sandbox, kPackScript,
                   {source.dir, source.base, source.trailing_slash ? "d" : "-"}, -1, out_fd));
    return Explain(outcome, shown, "not a directory in the sandbox");
  };
  if (request.host_path == "-") return pack(request.stream_fd);
  return copy_internal::ExtractToHost(source, request.host_path, pack, -1);
}

Status CopyToSandbox(const CopyRequest& request) {
  RETURN_IF_ERROR(CheckSandboxPath(request));
  std::string shown = request.sandbox + ":" + request.sandbox_path;
  ASSIGN_OR_RETURN(CopyPath dst, SplitCopyPath(request.sandbox_path, shown));
  if (request.host_path == "-") {
    ASSIGN_OR_RETURN(
        RunOutcome outcome,
        ExecScript(request.sandbox, std::string(kUnpackFunctions) + kUnpackStreamScript,
                   {request.sandbox_path}, request.stream_fd, -1));
    return Explain(outcome, shown, "no such directory in the sandbox");
  }
  ASSIGN_OR_RETURN(CopyPath source, SplitCopyPath(request.host_path, request.host_path));
  struct stat st {};
  if (::stat(request.host_path.c_str(), &st) != 0)
    return Error::FromErrno(errno, request.host_path);
  bool is_dir = S_ISDIR(st.st_mode);
  if ((source.contents || source.trailing_slash) && !is_dir) {
    return Error(ErrorCode::kInvalidArgument, request.host_path + ": not a directory");
  }
  ASSIGN_OR_RETURN(Pipe archive, MakePipe());
  UniqueFd read_end = std::move(archive.read), write_end = std::move(archive.write);
  // tar's stderr is shown once the sandbox's side succeeded (else: "Broken pipe").
  UniqueFd tar_errors(::memfd_create("corral-cp-tar-stderr", MFD_CLOEXEC));
  if (!tar_errors) return Error::FromErrno(errno, "memfd_create");
  // The host's files are read as the user who runs corral, as docker cp does.
  ASSIGN_OR_RETURN(pid_t tar, StartHostTar({"-c", "-f", "-", "-C", source.dir, "--", source.base},
                                           -1, write_end.get(), -1, false, tar_errors.get()));
  write_end.Reset();
  // A directory's contents into a missing destination: the destination is made.
  std::string entry = source.contents ? "." : source.base;
  std::string dst_path = dst.contents ? dst.dir : request.sandbox_path;
  Result<RunOutcome> outcome =
      ExecScript(request.sandbox, std::string(kUnpackFunctions) + kUnpackScript,
                 {dst_path, dst.dir, dst.contents ? "." : dst.base, entry, is_dir ? "d" : "f",
                  dst.trailing_slash ? "1" : "0"},
                 read_end.get(), -1);
  read_end.Reset();  // a tar still writing gets EPIPE
  ASSIGN_OR_RETURN(int tar_status, WaitHostTar(tar));
  if (!outcome) return outcome.error();
  Status explained =
      Explain(*outcome, shown,
              "destination directory " + (dst.trailing_slash ? request.sandbox_path : dst.dir) +
                  " does not exist in the sandbox");
  RETURN_IF_ERROR(explained);
  copy_internal::CopyToStderr(tar_errors.get());
  if (tar_status != 0) {
    return Error(ErrorCode::kIo, request.host_path + ": reading it failed (tar exited with " +
                                     std::to_string(tar_status) + ", its message is above)");
  }
  return Ok();
}

Status ExtractUntrustedArchive(int archive_fd, const CopyPath& source,
                               const std::string& host_dst) {
  return copy_internal::ExtractToHost(source, host_dst, nullptr, archive_fd);
}

}  // namespace corral::runtime
