#include "cli/jail_flags.h"

#include <cstdio>
#include <tuple>

#include "runtime/spec/config.h"
#include "runtime/spec/sizes.h"

namespace corral::cli {

void AddJailFlags(CLI::App* run, JailFlags* f) {
  run->add_option("--config", f->config, "YAML config file (see config.example.yaml)");
  run->add_option("--rootfs", f->rootfs, "directory tree to use as / instead of host dirs");
  run->add_option("--skills", f->skills, "host dir mounted read-only at /mnt/skills");
  run->add_option("--user-data", f->user_data, "host dir mounted read-write at /mnt/user-data");
  run->add_option("--acp-workspace", f->acp_workspace,
                  "host dir mounted read-only at /mnt/acp-workspace");
  run->add_option("-v,--mount", f->mounts, "HOST:CONTAINER[:ro|rw] bind mount (default ro)");
  run->add_option("-e,--env", f->env, "K=V added to the command's environment");
  run->add_option("-w,--workdir", f->workdir, "working directory inside the jail");
  run->add_option("--hostname", f->hostname, "hostname inside the jail (default sandbox)");
  run->add_option("--user", f->user, "UID[:GID] inside the jail (default 1000:1000)");
  run->add_option("--seccomp", f->seccomp, "default | strict | unconfined | /path/profile.json");
  run->add_option("--memory", f->memory, "memory limit, e.g. 256m (default 512m, no swap)");
  run->add_option("--cpus", f->cpus, "CPU limit in cores, e.g. 0.5 (default 1.0)");
  run->add_option("--pids-limit", f->pids, "max processes (default 256)");
  run->add_option("--timeout", f->timeout, "wall-clock limit in seconds (default 600, 0=none)");
  run->add_option("--cpu-time", f->cpu_time, "CPU-time limit in seconds (default none)");
  run->add_option("--output-limit", f->output_limit, "bytes kept per stream (default 10m)");
  run->add_option("--tmp-size", f->tmp_size, "size of /tmp (default 256m)");
}

namespace {

void ApplyFlags(const JailFlags& f, runtime::JailSpec* spec, std::vector<std::string>* problems) {
  auto note = [&](const std::string& flag, const Error& e) {
    problems->push_back(flag + ": " + e.message());
  };
  auto size = [&](const std::optional<std::string>& v, const char* flag, int64_t* out) {
    if (!v) return;
    auto parsed = runtime::ParseSize(*v);
    parsed ? void(*out = *parsed) : note(flag, parsed.error());
  };
  if (f.rootfs) spec->rootfs = *f.rootfs;
  if (f.skills) spec->skills_dir = *f.skills;
  if (f.user_data) spec->user_data_dir = *f.user_data;
  if (f.acp_workspace) spec->acp_workspace_dir = *f.acp_workspace;
  if (f.workdir) spec->workdir = *f.workdir;
  if (f.hostname) spec->hostname = *f.hostname;
  if (f.seccomp) spec->seccomp_profile = *f.seccomp;
  if (f.user) {
    auto ids = runtime::ParseUserFlag(*f.user);
    ids ? void(std::tie(spec->uid, spec->gid) = *ids) : note("--user", ids.error());
  }
  for (const auto& m : f.mounts) {
    auto mount = runtime::ParseMountFlag(m);
    mount ? spec->mounts.push_back(*mount) : note("--mount " + m, mount.error());
  }
  for (const auto& e : f.env) {
    auto kv = runtime::ParseEnvFlag(e);
    kv ? spec->env.push_back(*kv) : note("--env " + e, kv.error());
  }
  size(f.memory, "--memory", &spec->limits.memory_bytes);
  size(f.output_limit, "--output-limit", &spec->limits.output_limit_bytes);
  size(f.tmp_size, "--tmp-size", &spec->limits.tmp_size_bytes);
  if (f.cpus) spec->limits.cpus = *f.cpus;
  if (f.pids) spec->limits.pids = *f.pids;
  if (f.timeout) spec->limits.timeout_seconds = *f.timeout;
  if (f.cpu_time) spec->limits.cpu_time_seconds = *f.cpu_time;
}

}  // namespace

bool BuildSpec(const JailFlags& flags, runtime::JailSpec* spec) {
  if (!flags.config.empty()) {
    if (auto st = runtime::LoadConfigFile(flags.config, spec); !st) {
      std::fprintf(stderr, "corral: %s\n", st.error().message().c_str());
      return false;
    }
  }
  std::vector<std::string> problems;
  ApplyFlags(flags, spec, &problems);
  if (problems.empty()) return true;
  std::fprintf(stderr, "corral: invalid arguments:\n");
  for (const auto& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
  return false;
}

}  // namespace corral::cli
