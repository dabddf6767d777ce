#include "tools/providers/jail_sandbox.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/files.h"
#include "base/unique_fd.h"
#include "runtime/pool/pool_or_cold.h"
#include "runtime/run/identity.h"
#include "runtime/sandboxes/persistent.h"

namespace corral::runtime {
namespace {

SandboxError Unavailable(const Error& e) {
  return {SandboxErrc::kUnavailable, e.message(), e.sys_errno()};
}

// Host-only (beside the thread's user-data, never mounted into a sandbox): the name of
// the last sandbox made for the thread, so that one made anew can tell the agent.
std::string MarkerPath(const ThreadDirs& dirs) { return dirs.thread_dir + "/.corral-sandbox"; }

void WriteMarker(const ThreadDirs& dirs, const std::string& name) {
  UniqueFd fd(::open(MarkerPath(dirs).c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd) (void)!::write(fd.get(), name.data(), name.size());
}

std::string RecreatedNotice(double idle_timeout) {
  char timeout[64];
  std::snprintf(timeout, sizeof timeout, "%g s", idle_timeout);
  return std::string(
             "[corral] Note: this thread's sandbox was gone and has been created anew (it "
             "had been idle longer than sandbox.idle_timeout, ") +
         (idle_timeout > 0 ? timeout : "never") +
         ", or was removed, or its init ended). Processes started and files written outside "
         "/mnt/user-data by earlier calls are lost; /mnt/user-data is unchanged.";
}

}  // namespace

JailSandbox::JailSandbox(SandboxHold hold)
    : Sandbox(hold.record.name), hold_(std::move(hold)), record_(hold_.record) {}

SbResult<ResolvedPath> JailSandbox::Resolve(const std::string& path) const {
  RETURN_SB_IF_ERROR(RefuseNul(path, "path"));
  if (path.empty() || path[0] != '/') {
    return SandboxError{SandboxErrc::kInvalidArgument, path + ": path must be absolute"};
  }
  // Every file operation is use, as every exec is (`ps` idle times, the idle reaper).
  TouchSandbox(record_.name);
  ResolvedPath rp;
  rp.view.root = "/proc/" + std::to_string(record_.init_pid) + "/root";
  rp.view.in_root = true;
  // The host ids the sandbox's user is (a reserved identity's: runtime/run/identity.h).
  // A non-root caller (rootless mode) is that user already, and could not switch anyway.
  if (::geteuid() == 0) {
    auto identity = ResolveIdentity(record_.spec);
    if (!identity) return SandboxError{SandboxErrc::kUnavailable, identity.error().message()};
    rp.view.drop_to = std::make_pair(identity->uid, identity->gid);
  }
  rp.view.expect_process = std::make_pair(record_.init_pid, record_.init_start_ticks);
  rp.rel = path.substr(1);
  while (!rp.rel.empty() && rp.rel.back() == '/') rp.rel.pop_back();
  if (rp.rel.empty()) rp.rel = ".";
  rp.view_prefix = "";
  rp.virtual_path = path;
  return rp;
}

SbResult<CommandResult> JailSandbox::DoExecuteCommand(const std::string& command,
                                                      const EnvList& env,
                                                      std::optional<double> timeout) {
  for (const auto& [k, v] : env) {
    if (!IsValidEnvName(k)) {
      return SandboxError{SandboxErrc::kInvalidArgument, "invalid env name: " + k};
    }
  }
  ExecRequest req;
  req.sandbox = record_.name;
  req.argv = {"bash", "-c", command};
  req.env = env;
  const double seconds = timeout.value_or(kDefaultCommandTimeoutSeconds);
  req.timeout_seconds = seconds;
  req.io.capture_output = true;
  // Through a `corral pool`'s exec slot when one serves the default socket.
  auto outcome = ExecPooledOrDirect("auto", req);
  if (!outcome) return Unavailable(outcome.error());
  const RunOutcome& o = *outcome;
  if (o.status == RunStatus::kSetupFailed) {
    std::string why = o.setup_error ? o.setup_error->message : "exec setup failed";
    return SandboxError{SandboxErrc::kUnavailable, why};
  }
  CommandResult r;
  r.timed_out = o.status == RunStatus::kTimedOut;
  r.exit_code = o.signal ? -*o.signal : o.exit_code;
  if (o.limit) r.limit = LimitName(*o.limit);
  r.wall_ms = o.wall_ms;
  r.text = FormatCommandText(o.stdout_stream.text, o.stderr_stream.text, r.exit_code,
                             r.timed_out ? std::optional<double>(seconds) : std::nullopt);
  return r;
}

SbResult<std::string> JailSandbox::DoReadFile(const std::string& path,
                                              std::optional<int> start_line,
                                              std::optional<int> end_line) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsReadText(*rp, start_line, end_line);
}

SbResult<std::string> JailSandbox::DoDownloadFile(const std::string& path) {
  if (path.find("..") != std::string::npos ||
      (path != "/mnt/user-data" && path.rfind("/mnt/user-data/", 0) != 0)) {
    return SandboxError{SandboxErrc::kPermissionDenied,
                        "Access denied: downloads are limited to /mnt/user-data", EACCES};
  }
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsReadBytes(*rp, kDownloadMaxBytes);
}

SbResult<std::vector<std::string>> JailSandbox::DoListDir(const std::string& path, int max_depth) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsListDir(*rp, max_depth);
}

SbResult<std::vector<FileEntry>> JailSandbox::ListEntries(const std::string& path, int max_depth) {
  auto rp = Resolve(path);  // refuses a NUL byte first
  if (!rp) return rp.error();
  return OpsListEntries(*rp, max_depth);
}

SbResult<std::string> JailSandbox::ReadBytes(const std::string& path, int64_t max_bytes) {
  auto rp = Resolve(path);  // refuses a NUL byte first
  if (!rp) return rp.error();
  return OpsReadBytes(*rp, max_bytes);
}

SbStatus JailSandbox::DoWriteFile(const std::string& path, const std::string& content,
                                  bool append) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsWrite(*rp, content, append);
}

SbStatus JailSandbox::DoUpdateFile(const std::string& path, const std::string& bytes) {
  return WriteFile(path, bytes, false);
}

SbResult<GlobResult> JailSandbox::DoGlob(const std::string& path, const std::string& pattern,
                                         bool include_dirs, int max_results) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsGlob(*rp, pattern, include_dirs, max_results);
}

SbResult<GrepResult> JailSandbox::DoGrep(const std::string& path, const std::string& pattern,
                                         const GrepOptions& options) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsGrep(*rp, pattern, options);
}

JailSandboxProvider::JailSandboxProvider(ProviderConfig config, JailSpec base_spec)
    : ProviderBase(config, static_cast<size_t>(config.replicas)),
      base_spec_(std::move(base_spec)) {}

std::string JailSandboxProvider::IdFor(const ThreadDirs& dirs) const {
  return JailSandboxName(config_.base_dir, dirs.user_id, dirs.thread_id);
}

JailSpec JailSandboxProvider::SpecFor(const ThreadDirs& dirs) const {
  JailSpec spec = base_spec_;
  spec.argv.clear();
  spec.user_data_dir = dirs.user_data;
  spec.acp_workspace_dir = dirs.acp_workspace;
  if (config_.skills_path) {
    if (config_.skills_container_path == "/mnt/skills") {
      spec.skills_dir = *config_.skills_path;
    } else {
      spec.mounts.push_back({*config_.skills_path, config_.skills_container_path, true});
    }
  }
  for (const auto& m : config_.mounts) spec.mounts.push_back(m);
  return spec;
}

Result<std::shared_ptr<Sandbox>> JailSandboxProvider::FindLive(const std::string& name,
                                                               const ThreadDirs& dirs) {
  auto info = InspectSandbox(name);
  if (!info) {
    if (info.error().code() == ErrorCode::kNotFound) return std::shared_ptr<Sandbox>();
    return info.error();
  }
  if (info->record.spec.user_data_dir != dirs.user_data) {
    // Agent-visible: names the sandbox, never the other thread's host directory.
    return Error(ErrorCode::kAlreadyExists,
                 "sandbox " + name + " belongs to another thread; refusing to share it");
  }
  if (!info->alive) {
    RETURN_IF_ERROR(RemoveSandbox(name));  // its init is gone; start afresh
    return std::shared_ptr<Sandbox>();
  }
  auto hold = HoldSandbox(name);
  if (!hold) return std::shared_ptr<Sandbox>();  // reaped or removed just now
  return std::shared_ptr<Sandbox>(new JailSandbox(std::move(*hold)));
}

Result<std::shared_ptr<Sandbox>> JailSandboxProvider::Create(const ThreadDirs& dirs) {
  const std::string name = IdFor(dirs);
  for (int attempt = 0; attempt < 3; ++attempt) {
    ASSIGN_OR_RETURN(std::shared_ptr<Sandbox> live, FindLive(name, dirs));
    if (live) return live;
    auto marker = ReadFile(MarkerPath(dirs));
    const bool had_one = marker && Trim(*marker) == name;
    CreateRequest req;
    req.spec = SpecFor(dirs);
    req.name = name;
    req.idle_timeout_seconds = config_.idle_timeout;
    auto record = CreateSandbox(req);
    if (!record) {
      // Another process created it between our look and our create: look again.
      if (record.error().code() != ErrorCode::kAlreadyExists) return record.error();
      continue;
    }
    auto hold = HoldSandbox(name);
    if (!hold) continue;  // removed the moment it was made: make it again
    auto sandbox = std::make_shared<JailSandbox>(std::move(*hold));
    if (had_one) sandbox->SetNotice(RecreatedNotice(config_.idle_timeout));
    if (!had_one) WriteMarker(dirs, name);
    return std::shared_ptr<Sandbox>(std::move(sandbox));
  }
  return Error(ErrorCode::kInternal, "sandbox " + name + " keeps appearing and vanishing");
}

bool JailSandboxProvider::Alive(Sandbox& sandbox) {
  auto info = InspectSandbox(sandbox.id());
  return info && info->alive;
}

void JailSandboxProvider::Destroy(Sandbox& sandbox) { (void)RemoveSandbox(sandbox.id()); }

}  // namespace corral::runtime
