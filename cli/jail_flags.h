// The jail options shared by `corral run` and `corral create`: flags -> JailSpec.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "runtime/spec/spec.h"

namespace corral::cli {

// Raw flag values; only flags the user gave override the config file.
struct JailFlags {
  std::string config;
  std::optional<std::string> rootfs, skills, user_data, acp_workspace, workdir, hostname, user,
      seccomp, memory, output_limit, tmp_size, identity;
  std::optional<double> cpus, timeout;
  std::optional<int64_t> pids, cpu_time;
  std::optional<std::string> mode, oci_runtime;       // process | container; auto | crun | runc
  std::optional<std::string> network;                 // none | allowlist | host
  std::vector<std::string> allow, deny;               // allow-list rules (runtime/net/policy.h)
  std::optional<std::string> landlock, landlock_tcp;  // auto | on | off; on | off
  std::vector<std::string> mounts, volumes, env;
  bool rootless = false;
  bool workspace_overlay = false;
  bool docker_read_only = false, docker_init = false;  // accepted: what corral always does
};

void AddJailFlags(CLI::App* app, JailFlags* flags);
// Docker's --read-only and --init, which say what every jail already is (run, create).
void AddDockerDefaultFlags(CLI::App* app, JailFlags* flags);

// Which flag set which spec key ("mounts[1]" -> "-v /nope:/work", "limits.memory" ->
// "--memory 1k"), so that the runtime's problems, worded by spec key, name the flag.
struct FlagNames {
  std::vector<std::pair<std::string, std::string>> by_key;
};

// Defaults, then --config, then the flags. Problems (each naming its flag) go to stderr;
// returns false if there were any. *names (if given) learns which flag set which key.
bool BuildSpec(const JailFlags& flags, runtime::JailSpec* spec, FlagNames* names = nullptr);

// The exit code (125) of a command whose spec BuildSpec refused; with `json`, also prints
// the error object that `--json` callers parse in place of an outcome.
int InvalidSpecExit(bool json);

// `e` with every problem line about a key a flag set reworded to name the flag as given:
// "mounts[0].host_path: does not exist ..." -> "-v /nope:/work: host path does not exist
// ...". Keys that came from the config file keep their config key path.
Error NameFlags(const Error& e, const FlagNames& names);

// `-e NAME=VALUE`, or Docker's `-e NAME`: the caller's value of NAME, nothing when the
// caller has none (as docker does). Errors name the flag.
Result<std::optional<std::pair<std::string, std::string>>> ParseEnvOption(const std::string& e);

}  // namespace corral::cli
