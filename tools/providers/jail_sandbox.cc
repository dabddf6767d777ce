#include "tools/providers/jail_sandbox.h"

#include <cerrno>

#include "runtime/sandboxes/persistent.h"
#include "runtime/pool/pool_or_cold.h"

namespace corral::runtime {
namespace {

SandboxError Unavailable(const Error& e) {
  return {SandboxErrc::kUnavailable, e.message(), e.sys_errno()};
}

}  // namespace

JailSandbox::JailSandbox(SandboxRecord record) : Sandbox(record.name), record_(std::move(record)) {}

SbResult<ResolvedPath> JailSandbox::Resolve(const std::string& path) const {
  if (path.empty() || path[0] != '/') {
    return SandboxError{SandboxErrc::kInvalidArgument, path + ": path must be absolute"};
  }
  ResolvedPath rp;
  rp.view.root = "/proc/" + std::to_string(record_.init_pid) + "/root";
  rp.view.in_root = true;
  rp.view.drop_to = std::make_pair(record_.spec.uid, record_.spec.gid);
  rp.view.expect_process = std::make_pair(record_.init_pid, record_.init_start_ticks);
  rp.rel = path.substr(1);
  while (!rp.rel.empty() && rp.rel.back() == '/') rp.rel.pop_back();
  if (rp.rel.empty()) rp.rel = ".";
  rp.view_prefix = "";
  rp.virtual_path = path;
  return rp;
}

SbResult<CommandResult> JailSandbox::ExecuteCommand(const std::string& command, const EnvList& env,
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

SbResult<std::string> JailSandbox::ReadFile(const std::string& path, std::optional<int> start_line,
                                            std::optional<int> end_line) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsReadText(*rp, start_line, end_line);
}

SbResult<std::string> JailSandbox::DownloadFile(const std::string& path) {
  if (path.find("..") != std::string::npos ||
      (path != "/mnt/user-data" && path.rfind("/mnt/user-data/", 0) != 0)) {
    return SandboxError{SandboxErrc::kPermissionDenied,
                        "Access denied: downloads are limited to /mnt/user-data", EACCES};
  }
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsReadBytes(*rp, kDownloadMaxBytes);
}

SbResult<std::vector<std::string>> JailSandbox::ListDir(const std::string& path, int max_depth) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsListDir(*rp, max_depth);
}

SbStatus JailSandbox::WriteFile(const std::string& path, const std::string& content, bool append) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsWrite(*rp, content, append);
}

SbStatus JailSandbox::UpdateFile(const std::string& path, const std::string& bytes) {
  return WriteFile(path, bytes, false);
}

SbResult<GlobResult> JailSandbox::Glob(const std::string& path, const std::string& pattern,
                                       bool include_dirs, int max_results) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsGlob(*rp, pattern, include_dirs, max_results);
}

SbResult<GrepResult> JailSandbox::Grep(const std::string& path, const std::string& pattern,
                                       const GrepOptions& options) {
  auto rp = Resolve(path);
  if (!rp) return rp.error();
  return OpsGrep(*rp, pattern, options);
}

JailSandboxProvider::JailSandboxProvider(ProviderConfig config, JailSpec base_spec)
    : ProviderBase(config, static_cast<size_t>(config.replicas)),
      base_spec_(std::move(base_spec)) {}

std::string JailSandboxProvider::IdFor(const ThreadDirs& dirs) const {
  return JailSandboxName(dirs.user_id, dirs.thread_id);
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

Result<std::shared_ptr<Sandbox>> JailSandboxProvider::Create(const ThreadDirs& dirs) {
  const std::string name = IdFor(dirs);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto info = InspectSandbox(name);
    if (info) {
      if (info->record.spec.user_data_dir != dirs.user_data) {
        return Error(ErrorCode::kAlreadyExists, "sandbox " + name + " belongs to another thread (" +
                                                    info->record.spec.user_data_dir.value_or("?") +
                                                    "); refusing to share it");
      }
      if (info->alive) return std::shared_ptr<Sandbox>(new JailSandbox(info->record));
      RETURN_IF_ERROR(RemoveSandbox(name));  // dead: its init is gone; start afresh
    }
    CreateRequest req;
    req.spec = SpecFor(dirs);
    req.name = name;
    req.idle_timeout_seconds = config_.idle_timeout;
    auto record = CreateSandbox(req);
    if (record) return std::shared_ptr<Sandbox>(new JailSandbox(*record));
    // Another process created it between our look and our create: look again.
    if (record.error().code() != ErrorCode::kAlreadyExists) return record.error();
  }
  return Error(ErrorCode::kInternal, "sandbox " + name + " keeps appearing and vanishing");
}

bool JailSandboxProvider::Alive(Sandbox& sandbox) {
  auto info = InspectSandbox(sandbox.id());
  return info && info->alive;
}

void JailSandboxProvider::Destroy(Sandbox& sandbox) { (void)RemoveSandbox(sandbox.id()); }

}  // namespace corral::runtime
