// The `sandbox:` and `skills:` sections of the config file: DeerFlow's keys
// (docs/deerflow-contract.md) plus corral's own (base_dir, audit_log). Which
// provider serves the agent tools, their output limits, and where thread data lives.
//
// The main loader (runtime/spec/config.h) owns the rest of the file (limits, seccomp,
// namespaces: the JailSpec every jail sandbox is created from). LoadToolConfigFile below
// splits one file between the two. Parent side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "runtime/spec/spec.h"

namespace YAML {
class Node;
}

namespace corral::runtime {

enum class ProviderKind { kLocal, kJail, kAio };

struct AuditLogConfig {
  std::string path;               // empty: {base_dir}/audit.jsonl
  int64_t max_bytes = 10 * kMiB;  // rotate when the file would grow past this
  int keep = 3;                   // rotated files kept: path.1 .. path.N
  bool enabled = true;
};

struct ProviderConfig {
  ProviderKind use = ProviderKind::kJail;  // `use: local | jail | aio` (or a DeerFlow class path)
  bool allow_host_bash = false;            // local provider only
  std::vector<MountSpec> mounts;           // read_only defaults to true (corral's default)
  int bash_output_max_chars = 20000;       // 0 disables the truncation
  int read_file_output_max_chars = 50000;
  int ls_output_max_chars = 20000;
  double bash_command_timeout = 600;  // seconds
  int replicas = 3;                   // jail: live thread sandboxes kept (soft cap)
  double idle_timeout = 600;          // seconds; 0 = never
  // `corral serve` only: what its reaper does with a sandbox idle for idle_timeout:
  // remove it (destroy), or pause it (runtime/sandboxes/pause.h) and remove it once it has
  // been idle for paused_timeout (0 = never). A call to a paused sandbox resumes it first
  // unless resume_on_call is off (then it is refused with 409).
  enum class IdleAction { kDestroy, kPause };
  IdleAction idle_action = IdleAction::kDestroy;
  double paused_timeout = 86400;  // seconds of idleness, counted like idle_timeout's
  bool resume_on_call = true;
  int warm = 0;  // `corral serve` only: sandboxes kept ready for the next creates; 0 = off
  std::vector<std::pair<std::string, std::string>> environment;  // injected, redacted
  std::string base_dir = "/var/lib/corral";
  AuditLogConfig audit_log;
  // aio only: a provisioner API (`corral serve`, DeerFlow's provisioner) that makes each
  // thread's sandbox, and its key ('$NAME' reads the host environment); or, without one,
  // the single AIO server every thread shares.
  std::string provisioner_url;
  std::string provisioner_api_key;
  std::string aio_url;
  std::optional<std::string> skills_path;  // host dir of skills
  std::string skills_container_path = "/mnt/skills";
};

// Reads `sandbox` and `skills` (either may be undefined/null). Values of `environment`
// that start with '$' are taken from the host environment. Every problem is reported,
// one line each: `sandbox.replicas: must be > 0 (got 0)`.
Status LoadProviderConfig(const YAML::Node& sandbox, const YAML::Node& skills,
                          ProviderConfig* config);

// Reads a whole config file: `sandbox:` and `skills:` into *config, everything else
// through LoadConfigText into *spec.
Status LoadToolConfigFile(const std::string& path, ProviderConfig* config, JailSpec* spec);

// An environment variable name as DeerFlow accepts it for per-call env: [A-Za-z_][A-Za-z0-9_]*.
bool IsValidEnvName(const std::string& name);

// Secret values to redact from tool output: `environment` values of 8+ characters.
std::vector<std::string> SecretValues(const ProviderConfig& config);

}  // namespace corral::runtime
