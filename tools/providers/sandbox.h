// runtime::Sandbox: the interface the agent tools (tools/) speak to, one object per
// conversation thread. The same tool code runs over every provider (local, jail, later
// aio); each provider decides how a virtual path such as /mnt/user-data/workspace/a.txt
// reaches a file and how a command runs. Shapes follow DeerFlow's Sandbox
// (docs/deerflow-contract.md).
//
// Failures are values: SbResult<T> carries either T or a SandboxError whose code says what
// went wrong (not found, permission denied, ...); messages are for people, the code is for
// the tools' DeerFlow-compatible error texts. A command that fails is not an error: its
// exit code is part of the CommandResult.
//
// Thread safety: a Sandbox may be used from several threads at once; the tools serialise
// writes to one path themselves (tools/file_locks.h).
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace corral::runtime {

enum class SandboxErrc {
  kNotFound,          // no such file or directory
  kPermissionDenied,  // the sandbox user may not do this, or the path is outside the view
  kPathEscape,        // policy refusal: traversal, outside the allowed paths, a symlink
                      // leading out of its mount (message is the whole explanation)
  kIsDirectory,       // a file operation named a directory
  kNotDirectory,      // a directory operation named a file
  kReadOnly,          // the path is on a read-only mount
  kTooLarge,          // over a size cap (download 100 MiB, ...)
  kBinary,            // text was asked for and the file is binary
  kInvalidRegex,      // grep pattern does not compile
  kInvalidArgument,   // bad id, env name, path syntax
  kUnavailable,       // the sandbox is gone or cannot run this (host bash disabled, ...)
  kIo,                // anything else
};

// "not_found", "permission_denied", ...
const char* SandboxErrcName(SandboxErrc code);

struct SandboxError {
  SandboxErrc code = SandboxErrc::kIo;
  std::string message;
  int sys_errno = 0;
};

// Maps an errno to the closest code (ENOENT -> kNotFound, EROFS -> kReadOnly, ...).
SandboxError ErrorFromErrno(int err, const std::string& what);

template <typename T>
class [[nodiscard]] SbResult {
 public:
  SbResult(T value) : v_(std::move(value)) {}             // NOLINT
  SbResult(SandboxError error) : v_(std::move(error)) {}  // NOLINT
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const SandboxError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, SandboxError> v_;
};

template <>
class [[nodiscard]] SbResult<void> {
 public:
  SbResult() = default;
  SbResult(SandboxError error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const SandboxError& error() const { return error_; }

 private:
  SandboxError error_;
  bool ok_ = true;
};

using SbStatus = SbResult<void>;

// Returns the error of a failed SbStatus from the enclosing function.
#define RETURN_SB_IF_ERROR(expr)                \
  do {                                          \
    auto corral_sb_ = (expr);                   \
    if (!corral_sb_) return corral_sb_.error(); \
  } while (0)

using EnvList = std::vector<std::pair<std::string, std::string>>;

// What execute_command returns: `text` is exactly DeerFlow's string (stdout, then
// "\nStd Error:\n" + stderr, then the timeout notice or "\nExit Code: N", or
// "(no output)"); the rest is for the audit log.
struct CommandResult {
  std::string text;
  int exit_code = 0;  // -N when killed by signal N (as Python reports it)
  bool timed_out = false;
  std::optional<std::string> limit;  // which limit fired ("wall_time", "memory", ...)
  double wall_ms = 0;
};

struct GrepMatch {
  std::string path;  // virtual path
  int line_number = 0;
  std::string line;  // at most 200 chars ("..." appended when cut)
};

struct GlobResult {
  std::vector<std::string> matches;  // virtual paths, sorted
  bool truncated = false;
};

struct GrepResult {
  std::vector<GrepMatch> matches;
  bool truncated = false;  // more than max_results matches
  // A per-call work bound ended the search before every file was read: the limit's name
  // ("grep_max_bytes_scanned", "grep_max_seconds"). The matches found so far are kept.
  std::optional<std::string> stopped_by;
};

// Per-call work bounds of grep (named in the tool's notice when they fire).
inline constexpr int64_t kGrepMaxBytesScanned = 64LL * 1024 * 1024;
inline constexpr double kGrepMaxSeconds = 10;
inline constexpr int64_t kGrepMaxFileBytes = 1000000;  // DeerFlow's local grep skips larger files

struct GrepOptions {
  std::optional<std::string> glob;  // file filter, relative to the searched path
  bool literal = false;
  bool case_sensitive = false;
  int max_results = 100;
  int64_t max_bytes_scanned = kGrepMaxBytesScanned;  // file bytes read, over all files
  double max_seconds = kGrepMaxSeconds;              // wall time of the search
  // Files larger than this are skipped (the AIO API's max_file_size sets it per call).
  int64_t max_file_bytes = kGrepMaxFileBytes;
};

inline constexpr int64_t kDownloadMaxBytes = 100LL * 1024 * 1024;
inline constexpr int kDefaultCommandTimeoutSeconds = 600;

class Sandbox {
 public:
  explicit Sandbox(std::string id) : id_(std::move(id)) {}
  virtual ~Sandbox() = default;
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  const std::string& id() const { return id_; }
  // A sentence the agent must read once, with its next tool answer: its sandbox was made
  // anew (earlier processes and files outside /mnt/user-data are gone). Empty: none.
  std::string TakeNotice() { return std::exchange(notice_, {}); }
  void SetNotice(std::string notice) { notice_ = std::move(notice); }
  // True for the host provider: tools validate and translate virtual paths themselves
  // (DeerFlow's is_local_sandbox()).
  virtual bool IsLocal() const { return false; }

  // The operations. Each refuses a NUL byte in any path, command, env name or value and
  // glob pattern (kInvalidArgument, "<what> must not contain a NUL byte") before the
  // provider sees it: the kernel would read such a string cut at the NUL, so the provider
  // would check one path and open another. Then the provider's Do* runs.

  // Runs `command` with a shell in the sandbox, stdin at EOF, `env` for this call only
  // (names must match [A-Za-z_][A-Za-z0-9_]*), killed as a whole tree after `timeout`
  // seconds (default 600). Background processes survive and do not delay the return.
  SbResult<CommandResult> ExecuteCommand(const std::string& command, const EnvList& env,
                                         std::optional<double> timeout);
  // Text of a file; lines 1-based, both ends inclusive; kBinary for binary content.
  SbResult<std::string> ReadFile(const std::string& path, std::optional<int> start_line,
                                 std::optional<int> end_line);
  // Raw bytes, only under /mnt/user-data, at most kDownloadMaxBytes (else kTooLarge).
  SbResult<std::string> DownloadFile(const std::string& path);
  // Absolute paths below `path` down to max_depth (1 = children), sorted, directories
  // with a trailing '/', ignore patterns skipped.
  SbResult<std::vector<std::string>> ListDir(const std::string& path, int max_depth = 2);
  // Creates (with parent directories), overwrites or appends text.
  SbStatus WriteFile(const std::string& path, const std::string& content, bool append);
  // Binary create/overwrite (uploads, artifacts).
  SbStatus UpdateFile(const std::string& path, const std::string& bytes);
  SbResult<GlobResult> Glob(const std::string& path, const std::string& pattern, bool include_dirs,
                            int max_results);
  // `path` may be a directory or a single file.
  SbResult<GrepResult> Grep(const std::string& path, const std::string& pattern,
                            const GrepOptions& options);

 protected:
  // What each provider implements; called only with NUL-free strings.
  virtual SbResult<CommandResult> DoExecuteCommand(const std::string& command, const EnvList& env,
                                                   std::optional<double> timeout) = 0;
  virtual SbResult<std::string> DoReadFile(const std::string& path, std::optional<int> start_line,
                                           std::optional<int> end_line) = 0;
  virtual SbResult<std::string> DoDownloadFile(const std::string& path) = 0;
  virtual SbResult<std::vector<std::string>> DoListDir(const std::string& path, int max_depth) = 0;
  virtual SbStatus DoWriteFile(const std::string& path, const std::string& content,
                               bool append) = 0;
  virtual SbStatus DoUpdateFile(const std::string& path, const std::string& bytes) = 0;
  virtual SbResult<GlobResult> DoGlob(const std::string& path, const std::string& pattern,
                                      bool include_dirs, int max_results) = 0;
  virtual SbResult<GrepResult> DoGrep(const std::string& path, const std::string& pattern,
                                      const GrepOptions& options) = 0;

 private:
  std::string id_;
  std::string notice_;
};

// kInvalidArgument "<what> must not contain a NUL byte" when `value` holds one. Every
// string that becomes a path or an exec argument passes this before any other check.
SbStatus RefuseNul(std::string_view value, const std::string& what);

// Formats a finished command the way DeerFlow's LocalSandbox does.
std::string FormatCommandText(const std::string& out, const std::string& err, int exit_code,
                              std::optional<double> timed_out_after);

// "1 second", "1.5 seconds", "600 seconds".
std::string SecondsText(double seconds);

}  // namespace corral::runtime
