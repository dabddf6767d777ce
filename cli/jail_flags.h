// The jail options shared by `corral run` and `corral create`: flags -> JailSpec.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/spec/spec.h"

namespace corral::cli {

// Raw flag values; only flags the user gave override the config file.
struct JailFlags {
  std::string config;
  std::optional<std::string> rootfs, skills, user_data, acp_workspace, workdir, hostname, user,
      seccomp, memory, output_limit, tmp_size;
  std::optional<double> cpus, timeout;
  std::optional<int64_t> pids, cpu_time;
  std::vector<std::string> mounts, env;
};

void AddJailFlags(CLI::App* app, JailFlags* flags);

// Defaults, then --config, then the flags. Problems (each naming its flag) go to stderr;
// returns false if there were any.
bool BuildSpec(const JailFlags& flags, runtime::JailSpec* spec);

}  // namespace corral::cli
