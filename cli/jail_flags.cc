#include "cli/jail_flags.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <tuple>

#include "cli/commands.h"
#include "runtime/run/outcome.h"
#include "runtime/spec/config.h"
#include "runtime/spec/sizes.h"

namespace corral::cli {

void AddJailFlags(CLI::App* run, JailFlags* f) {
  run->add_option("--config", f->config, "YAML config file (see config.example.yaml)");
  run->add_option("--mode", f->mode,
                  "process (default: corral's own jail) | container (the same jail as an OCI "
                  "bundle run by crun or runc)");
  run->add_option("--oci-runtime", f->oci_runtime,
                  "with --mode container: auto (default: crun, then runc) | crun | runc | /path");
  run->add_option("--rootfs", f->rootfs, "directory tree to use as / instead of host dirs");
  run->add_option("--skills", f->skills, "host dir mounted read-only at /mnt/skills");
  run->add_option("--user-data", f->user_data, "host dir mounted read-write at /mnt/user-data");
  run->add_option("--acp-workspace", f->acp_workspace,
                  "host dir mounted read-only at /mnt/acp-workspace");
  // One value per occurrence: CLI11 would otherwise take `ls` of `-v A:B ls` as a mount.
  run->add_option("-v,--mount", f->mounts,
                  "HOST:CONTAINER[:ro|rw] bind mount (default ro); NAME:CONTAINER[:ro|rw] a "
                  "named volume, as --volume")
      ->allow_extra_args(false);
  run->add_option("--volume", f->volumes,
                  "NAME:CONTAINER[:ro|rw] a named volume (default rw; made if missing: corral "
                  "volume create)")
      ->allow_extra_args(false);
  run->add_option("-e,--env", f->env,
                  "K=V added to the command's environment (K alone: the "
                  "caller's value of K, if it has one)")
      ->allow_extra_args(false);
  run->add_option("-w,--workdir", f->workdir, "working directory inside the jail");
  run->add_option("--hostname", f->hostname, "hostname inside the jail (default sandbox)");
  run->add_flag("--workspace-overlay", f->workspace_overlay,
                "create: the workspace (--user-data's workspace/) as an overlay; its changes "
                "reach the host directory only with corral commit (corral diff lists them)");
  run->add_flag("--rootless", f->rootless,
                "a user namespace for the jail even as root (always on for non-root callers)");
  run->add_option("--identity", f->identity,
                  "who the jail's uid 1000 is on the host as root: auto (default: a reserved "
                  "id where corral setup ids made a range) | reserved | host-uid");
  run->add_option("-u,--user", f->user, "UID[:GID] inside the jail (default 1000:1000)");
  run->add_option("--seccomp", f->seccomp, "default | strict | unconfined | /path/profile.json");
  run->add_option("--network", f->network,
                  "none (default: loopback only) | allowlist (only what --allow names, through "
                  "corral's proxy) | host (needs unsafe.host_network in --config)");
  run->add_option("--allow", f->allow,
                  "what --network allowlist (implied) reaches: pypi.org (ports 80 and 443), "
                  "*.github.com, api.example.com:8443, * (any public address), "
                  "10.1.0.0/16:5432; repeatable")
      ->allow_extra_args(false);
  run->add_option("--deny", f->deny, "never reached, even if allowed (same syntax); repeatable")
      ->allow_extra_args(false);
  run->add_option("--landlock", f->landlock,
                  "auto (default: where the kernel has it) | on (refuse to run without it) | off: "
                  "Landlock as a second filesystem fence");
  run->add_option("--landlock-tcp", f->landlock_tcp,
                  "on (default) | off: with Landlock and --network allowlist, also fence TCP "
                  "bind/connect (off for a command there that serves on localhost); network "
                  "none leaves the jail's own loopback open");
  run->add_option("-m,--memory", f->memory, "memory limit, e.g. 256m (default 512m, no swap)");
  run->add_option("--cpus", f->cpus, "CPU limit in cores, e.g. 0.5 (default 1.0)");
  run->add_option("--pids-limit", f->pids, "max processes (default 256)");
  run->add_option("--timeout", f->timeout, "wall-clock limit in seconds (default 600, 0=none)");
  run->add_option("--cpu-time", f->cpu_time, "CPU-time limit in seconds (default none)");
  run->add_option("--output-limit", f->output_limit, "bytes kept per stream (default 10m)");
  run->add_option(
      "--tmp-size", f->tmp_size,
      "size of the tmpfs that /tmp, /var/tmp, $HOME, /run and /dev/shm share (default 256m)");
}

void AddDockerDefaultFlags(CLI::App* app, JailFlags* f) {
  app->add_flag("--read-only", f->docker_read_only,
                "accepted for docker's sake: the jail's / is always read-only (/tmp, /var/tmp, "
                "/run, $HOME and /dev/shm are writable tmpfs of the jail's own)");
  app->add_flag("--init", f->docker_init,
                "accepted for docker's sake: PID 1 of every jail is an init of corral's own, which "
                "reaps orphans; the command is never PID 1");
}

Result<std::optional<std::pair<std::string, std::string>>> ParseEnvOption(const std::string& e) {
  std::string flag = e;
  if (e.find('=') == std::string::npos) {
    const char* value = std::getenv(e.c_str());
    if (value == nullptr) {
      // docker's `-e NAME` with NAME unset leaves it out; an invalid NAME is still an error.
      if (auto kv = runtime::ParseEnvFlag(e + "="); !kv) {
        return Error(ErrorCode::kInvalidArgument,
                     "NAME must match [A-Za-z_][A-Za-z0-9_]*, got \"" + e + "\"");
      }
      return std::optional<std::pair<std::string, std::string>>();
    }
    flag = e + "=" + value;
  }
  ASSIGN_OR_RETURN(auto kv, runtime::ParseEnvFlag(flag));
  return std::optional<std::pair<std::string, std::string>>(std::move(kv));
}

namespace {

// A host path as given on the command line, made absolute against the current directory and
// normalised (`--user-data ./t1`, `-v ./src:/src`), as docker does for -v.
std::string HostPathFromFlag(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::error_code error;  // the current directory was removed: left relative, and refused
  const std::filesystem::path made = std::filesystem::absolute(path, error);
  if (error) return path;
  std::string absolute = made.lexically_normal().string();
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  return absolute;
}

// Applies the flags one by one, noting problems (by flag) and which flag set which key.
class FlagApplier {
 public:
  FlagApplier(runtime::JailSpec* spec, std::vector<std::string>* problems, FlagNames* names)
      : spec_(spec), problems_(problems), names_(names) {}

  void Note(const std::string& flag, const Error& e) {
    problems_->push_back(flag + ": " + e.message());
  }
  void Key(const std::string& key, const std::string& flag) {
    names_->by_key.emplace_back(key, flag);
  }
  template <typename T, typename V>
  void Set(const std::optional<V>& v, std::initializer_list<std::string_view> flag, const char* key,
           T* out) {
    if (!v) return;
    *out = *v;
    Key(key, FlagAsGiven(flag, Shown(*v)));
  }
  // A mode's flag (--mode, --identity; runtime/spec/modes.h), parsed here so that a bad
  // value is named by its flag, in the words Validate() used for the key.
  template <typename E>
  void Mode(const std::optional<std::string>& v, std::string_view flag, const char* key, E* out) {
    if (!v) return;
    const std::string given = FlagAsGiven({flag}, *v);
    if (std::optional<E> mode = runtime::ParseMode<E>(*v)) {
      *out = *mode;
      Key(key, given);
    } else {
      problems_->push_back(given + ": " + runtime::BadModeText<E>(*v));
    }
  }
  void OciRuntime(const std::optional<std::string>& v) {
    if (!v) return;
    const std::string given = FlagAsGiven({"--oci-runtime"}, *v);
    if (auto choice = runtime::ParseOciRuntime(*v)) {
      spec_->oci_runtime = *choice;
      Key("oci_runtime", given);
    } else {
      problems_->push_back(given + ": " + runtime::BadOciRuntimeText(*v));
    }
  }
  // Set() for a host path: a relative one is taken from the current directory.
  void HostPath(const std::optional<std::string>& v, std::initializer_list<std::string_view> flag,
                const char* key, std::optional<std::string>* out) {
    if (!v) return;
    *out = HostPathFromFlag(*v);
    Key(key, FlagAsGiven(flag, *v));
  }
  void Size(const std::optional<std::string>& v, std::initializer_list<std::string_view> flag,
            const char* key, int64_t* out) {
    if (!v) return;
    auto parsed = runtime::ParseSize(*v);
    parsed ? void(*out = *parsed) : Note(FlagAsGiven(flag, *v), parsed.error());
    Key(key, FlagAsGiven(flag, *v));
  }

  void Mounts(const std::vector<std::string>& mounts) {
    for (const auto& m : mounts) {
      const std::string as_given = FlagAsGiven({"-v", "--mount"}, m);
      auto mount = runtime::ParseMountFlag(m);
      if (!mount) {
        Note(as_given, mount.error());
        continue;
      }
      // As docker reads -v: a source that is no path (absolute, or ./ relative) is a
      // volume's name.
      if (mount->host_path[0] != '/' && mount->host_path[0] != '.') {
        if (!runtime::IsValidVolumeName(mount->host_path)) {
          Note(as_given,
               Error(ErrorCode::kInvalidArgument,
                     "'" + mount->host_path + "' is no volume name (" + runtime::kVolumeNameRule +
                         "); a host directory is an absolute path or starts with . "
                         "(here: ./" +
                         mount->host_path + ")"));
          continue;
        }
        Volume(m, as_given);
        continue;
      }
      mount->host_path = HostPathFromFlag(mount->host_path);
      Key("mounts[" + std::to_string(spec_->mounts.size()) + "]", as_given);
      spec_->mounts.push_back(*mount);
    }
  }
  void Volume(const std::string& flag, const std::string& as_given) {
    auto volume = runtime::ParseVolumeFlag(flag);
    if (!volume) {
      Note(as_given, volume.error());
      return;
    }
    Key("mounts[" + std::to_string(spec_->mounts.size()) + "]", as_given);
    spec_->mounts.push_back(*volume);
  }
  // --network/--allow/--deny; a rule's problem in Validate (network.allow[3]) names its flag.
  void Network(const JailFlags& f) {
    const size_t allow_base = spec_->network.allow.size();
    const size_t deny_base = spec_->network.deny.size();
    const std::vector<std::string> problems =
        runtime::ApplyNetworkFlags({f.network, f.allow, f.deny}, spec_);
    problems_->insert(problems_->end(), problems.begin(), problems.end());
    if (!problems.empty()) return;
    if (f.network) Key("network.mode", FlagAsGiven({"--network"}, *f.network));
    for (size_t i = 0; i < f.allow.size(); ++i) {
      Key("network.allow[" + std::to_string(allow_base + i) + "]",
          FlagAsGiven({"--allow"}, f.allow[i]));
    }
    for (size_t i = 0; i < f.deny.size(); ++i) {
      Key("network.deny[" + std::to_string(deny_base + i) + "]",
          FlagAsGiven({"--deny"}, f.deny[i]));
    }
  }
  // --landlock auto|on|off (true/false too) and --landlock-tcp on|off.
  void Landlock(const JailFlags& f) {
    using runtime::LandlockMode;
    auto word = [](const std::string& v, bool with_auto) -> std::optional<LandlockMode> {
      if (with_auto && v == "auto") return LandlockMode::kAuto;
      if (v == "on" || v == "true") return LandlockMode::kOn;
      if (v == "off" || v == "false") return LandlockMode::kOff;
      return std::nullopt;
    };
    if (f.landlock) {
      if (auto v = word(*f.landlock, true)) {
        spec_->landlock.enabled = *v;
        Key("landlock.enabled", FlagAsGiven({"--landlock"}, *f.landlock));
      } else {
        problems_->push_back("--landlock " + *f.landlock + ": expected auto, on or off");
      }
    }
    if (f.landlock_tcp) {
      if (auto v = word(*f.landlock_tcp, false)) {
        spec_->landlock.tcp = *v == LandlockMode::kOn;
        Key("landlock.tcp", FlagAsGiven({"--landlock-tcp"}, *f.landlock_tcp));
      } else {
        problems_->push_back("--landlock-tcp " + *f.landlock_tcp + ": expected on or off");
      }
    }
  }
  void Env(const std::vector<std::string>& env) {
    for (const auto& e : env) {
      auto kv = ParseEnvOption(e);
      if (!kv) {
        Note(FlagAsGiven({"-e", "--env"}, e), kv.error());
        continue;
      }
      if (!*kv) continue;
      Key("env[" + std::to_string(spec_->env.size()) + "]", FlagAsGiven({"-e", "--env"}, e));
      spec_->env.push_back(**kv);
    }
  }

 private:
  static std::string Shown(const std::string& v) { return v; }
  template <typename V>
  static std::string Shown(const V& v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return buf;
  }

  runtime::JailSpec* spec_;
  std::vector<std::string>* problems_;
  FlagNames* names_;
};

void ApplyFlags(const JailFlags& f, runtime::JailSpec* spec, std::vector<std::string>* problems,
                FlagNames* names) {
  FlagApplier a(spec, problems, names);
  a.Mode(f.mode, "--mode", "mode", &spec->mode);
  a.OciRuntime(f.oci_runtime);
  a.HostPath(f.rootfs, {"--rootfs"}, "rootfs", &spec->rootfs);
  a.HostPath(f.skills, {"--skills"}, "skills_dir", &spec->skills_dir);
  a.HostPath(f.user_data, {"--user-data"}, "user_data_dir", &spec->user_data_dir);
  a.HostPath(f.acp_workspace, {"--acp-workspace"}, "acp_workspace_dir", &spec->acp_workspace_dir);
  a.Set(f.workdir, {"-w", "--workdir"}, "workdir", &spec->workdir);
  a.Set(f.hostname, {"--hostname"}, "hostname", &spec->hostname);
  a.Mode(f.identity, "--identity", "identity", &spec->identity);
  a.Set(f.seccomp, {"--seccomp"}, "seccomp", &spec->seccomp_profile);
  if (f.user) {
    auto ids = runtime::ParseUserFlag(*f.user);
    ids ? void(std::tie(spec->uid, spec->gid) = *ids) : a.Note("--user", ids.error());
    a.Key("user", FlagAsGiven({"-u", "--user"}, *f.user));
  }
  if (f.rootless) spec->rootless = true;
  if (f.workspace_overlay) {
    spec->workspace_overlay = true;
    a.Key("workspace_overlay", "--workspace-overlay");
  }
  a.Network(f);
  a.Landlock(f);
  a.Mounts(f.mounts);
  for (const auto& v : f.volumes) a.Volume(v, FlagAsGiven({"--volume"}, v));
  a.Env(f.env);
  a.Size(f.memory, {"-m", "--memory"}, "limits.memory", &spec->limits.memory_bytes);
  a.Size(f.output_limit, {"--output-limit"}, "limits.output", &spec->limits.output_limit_bytes);
  a.Size(f.tmp_size, {"--tmp-size"}, "limits.tmp_size", &spec->limits.tmp_size_bytes);
  a.Set(f.cpus, {"--cpus"}, "limits.cpus", &spec->limits.cpus);
  a.Set(f.pids, {"--pids-limit"}, "limits.pids", &spec->limits.pids);
  a.Set(f.timeout, {"--timeout"}, "limits.timeout", &spec->limits.timeout_seconds);
  a.Set(f.cpu_time, {"--cpu-time"}, "limits.cpu_time", &spec->limits.cpu_time_seconds);
}

// "host_path" -> "host path ": the part of a key under the flag's own key, in words.
std::string SubfieldWords(std::string rest) {
  if (rest.empty()) return "";
  if (rest[0] == '.') rest.erase(0, 1);
  for (char& c : rest) {
    if (c == '_' || c == '.') c = ' ';
  }
  return rest + " ";
}

std::string NameFlagsInLine(const std::string& line, const FlagNames& names) {
  const size_t indent = line.find_first_not_of(' ');
  const size_t colon = line.find(": ");
  if (indent == std::string::npos || colon == std::string::npos) return line;
  const std::string key = line.substr(indent, colon - indent);
  for (const auto& [prefix, flag] : names.by_key) {
    const bool under = key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0 &&
                       key[prefix.size()] == '.';
    if (key != prefix && !under) continue;
    return line.substr(0, indent) + flag + ": " + SubfieldWords(key.substr(prefix.size())) +
           line.substr(colon + 2);
  }
  return line;
}

}  // namespace

Error NameFlags(const Error& e, const FlagNames& names) {
  std::string out;
  size_t start = 0;
  const std::string& text = e.message();
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (!out.empty() || start > 0) out += '\n';
    out += NameFlagsInLine(text.substr(start, end - start), names);
    start = end + 1;
  }
  return Error(e.code(), out, e.sys_errno());
}

bool BuildSpec(const JailFlags& flags, runtime::JailSpec* spec, FlagNames* names) {
  if (!flags.config.empty()) {
    if (auto st = runtime::LoadConfigFile(flags.config, spec); !st) {
      std::fprintf(stderr, "corral: %s\n", st.error().message().c_str());
      return false;
    }
  }
  std::vector<std::string> problems;
  FlagNames unused;
  ApplyFlags(flags, spec, &problems, names != nullptr ? names : &unused);
  if (problems.empty()) return true;
  std::fprintf(stderr, "corral: invalid arguments:\n");
  for (const auto& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
  return false;
}

int InvalidSpecExit(bool json) {
  if (json) {
    std::cout << runtime::ErrorToJson(Error(ErrorCode::kInvalidArgument,
                                            "invalid arguments or configuration (see stderr)"))
              << std::endl;
  }
  return 125;
}

}  // namespace corral::cli
