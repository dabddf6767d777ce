#include "runtime/run/outcome.h"

#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <nlohmann/json.hpp>
#include <string_view>

namespace corral::runtime {

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kExited:
      return "exited";
    case RunStatus::kSignaled:
      return "signaled";
    case RunStatus::kTimedOut:
      return "timed_out";
    case RunStatus::kOomKilled:
      return "oom_killed";
    case RunStatus::kSetupFailed:
      return "setup_failed";
  }
  return "unknown";
}

const char* LimitName(LimitKind limit) {
  switch (limit) {
    case LimitKind::kMemory:
      return "memory";
    case LimitKind::kPids:
      return "pids";
    case LimitKind::kWallTime:
      return "wall_time";
    case LimitKind::kCpuTime:
      return "cpu_time";
    case LimitKind::kOutput:
      return "output";
    case LimitKind::kFileSize:
      return "file_size";
  }
  return "unknown";
}

void ClassifyEnd(int wait_status, const EndEvidence& evidence, RunOutcome* o) {
  if (WIFEXITED(wait_status)) {
    o->status = RunStatus::kExited;
    o->exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    o->status = RunStatus::kSignaled;
    o->signal = WTERMSIG(wait_status);
  }
  const double cpu_ms = o->cpu_user_ms + o->cpu_system_ms;
  const auto& cpu_limit = evidence.cpu_time_limit_seconds;
  if (evidence.timed_out) {
    o->status = RunStatus::kTimedOut;
    o->limit = LimitKind::kWallTime;
  } else if (evidence.oom_kills > 0 && o->status == RunStatus::kSignaled) {
    o->status = RunStatus::kOomKilled;
    o->limit = LimitKind::kMemory;
  } else if (o->signal == SIGXCPU ||
             (o->signal == SIGKILL && cpu_limit && cpu_ms >= *cpu_limit * 1000.0)) {
    o->limit = LimitKind::kCpuTime;
  } else if (o->signal == SIGXFSZ) {
    o->limit = LimitKind::kFileSize;
  } else if (evidence.oom_kills > 0) {
    o->limit = LimitKind::kMemory;  // a child was OOM-killed; the command survived it
  } else if (evidence.pids_limit_hit) {
    o->limit = LimitKind::kPids;
  } else if (o->stdout_stream.dropped_bytes > 0 || o->stderr_stream.dropped_bytes > 0) {
    o->limit = LimitKind::kOutput;
  }
}

int CliExitCode(const RunOutcome& outcome) {
  if (outcome.interrupted_by) return 128 + *outcome.interrupted_by;
  switch (outcome.status) {
    case RunStatus::kExited:
      return outcome.exit_code;
    case RunStatus::kTimedOut:
      return 124;
    case RunStatus::kOomKilled:
      return 128 + 9;
    case RunStatus::kSignaled:
      return 128 + outcome.signal.value_or(9);
    case RunStatus::kSetupFailed:
      if (outcome.setup_error && outcome.setup_error->step == jail::SetupStep::kExecve) {
        int err = outcome.setup_error->err;
        if (err == ENOENT || err == ENOTDIR) return 127;
        if (err == EACCES || err == ENOEXEC || err == EISDIR || err == EPERM) return 126;
      }
      return 125;
  }
  return 125;
}

namespace {

nlohmann::json OptionalJson(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string LandlockHint(const RunOutcome& o) {
  if (!o.landlock || !o.landlock->enforced || !o.captured || o.setup_error) return "";
  if (o.status == RunStatus::kExited && o.exit_code == 0) return "";
  constexpr std::string_view kDenied = "Permission denied";
  if (o.stderr_stream.text.find(kDenied) == std::string::npos &&
      o.stdout_stream.text.find(kDenied) == std::string::npos) {
    return "";
  }
  if (o.unwritable_mounts > 0) {
    return "the command was refused a permission (EACCES), and a read-write mount named in "
           "the warnings is not writable by the sandbox user: run the chown that warning gives "
           "(Landlock allows writes there; turning it off would not help)";
  }
  return "the command was refused a permission (EACCES) while Landlock (ABI " +
         std::to_string(o.landlock->abi) +
         ") fenced it: if the path or TCP port is one the jail's mounts or network mode allow, "
         "Landlock may have refused it; rerun with --landlock off (landlock.enabled: false) to "
         "confirm" +
         (o.landlock->tcp ? ", or --landlock-tcp off for a localhost TCP server" : "");
}

std::string OutcomeToJson(const RunOutcome& o) {
  nlohmann::json j;
  j["status"] = RunStatusName(o.status);
  j["exit_code"] = o.status == RunStatus::kExited ? o.exit_code : CliExitCode(o);
  j["signal"] = o.signal ? nlohmann::json(*o.signal) : nlohmann::json(nullptr);
  j["limit"] = o.limit ? nlohmann::json(LimitName(*o.limit)) : nlohmann::json(nullptr);
  j["wall_ms"] = o.wall_ms;
  j["cpu_user_ms"] = o.cpu_user_ms;
  j["cpu_system_ms"] = o.cpu_system_ms;
  j["memory_peak_bytes"] = OptionalJson(o.memory_peak_bytes);
  j["pids_peak"] = OptionalJson(o.pids_peak);
  if (o.captured) {
    j["stdout"] = o.stdout_stream.text;
    j["stderr"] = o.stderr_stream.text;
  }
  j["stdout_bytes"] = o.stdout_stream.bytes;
  j["stderr_bytes"] = o.stderr_stream.bytes;
  j["stdout_dropped_bytes"] = o.stdout_stream.dropped_bytes;
  j["stderr_dropped_bytes"] = o.stderr_stream.dropped_bytes;
  if (o.setup_error) {
    j["setup_error"] = {{"step", jail::StepName(o.setup_error->step)},
                        {"errno", jail::ErrnoName(o.setup_error->err)},
                        {"message", o.setup_error->ToString()}};
  } else {
    j["setup_error"] = nullptr;
  }
  if (o.interrupted_by) j["interrupted_by"] = *o.interrupted_by;
  if (o.pooled) j["pooled"] = true;
  if (!o.oci_runtime.empty()) j["runtime"] = o.oci_runtime;
  if (!o.warnings.empty()) j["warnings"] = o.warnings;
  if (!o.network_json.empty()) {
    nlohmann::json network = nlohmann::json::parse(o.network_json, nullptr, false);
    if (!network.is_discarded()) j["network"] = std::move(network);
  }
  if (o.landlock) {
    const LandlockOutcome& l = *o.landlock;
    j["landlock"] = {{"enforced", l.enforced}, {"abi", l.abi}};
    if (l.enforced) {
      j["landlock"]["tcp"] = l.tcp;
      if (std::string hint = LandlockHint(o); !hint.empty()) j["landlock"]["hint"] = hint;
    } else {
      j["landlock"]["reason"] = l.reason;
    }
  }
  if (o.identity) {
    const IdentityOutcome& id = *o.identity;
    j["identity"] = {{"mode", id.mode},
                     {"uid", id.uid},
                     {"gid", id.gid},
                     {"host_uid", id.host_uid},
                     {"host_gid", id.host_gid}};
    if (!id.note.empty()) j["identity"]["note"] = id.note;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ErrorToJson(const Error& error) {
  RunOutcome o;
  o.status = RunStatus::kSetupFailed;
  nlohmann::json j = nlohmann::json::parse(OutcomeToJson(o));
  j["exit_code"] = 125;
  j["setup_error"] = {
      {"step", error.code() == ErrorCode::kInvalidArgument ? "validate" : "prepare"},
      {"errno", error.sys_errno() != 0 ? nlohmann::json(jail::ErrnoName(error.sys_errno()))
                                       : nlohmann::json(nullptr)},
      {"message", error.message()}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace corral::runtime
