// Configuration: the YAML file (config.example.yaml documents every key) and the CLI flag
// syntaxes, parsed into a JailSpec, and Validate(), the one place that checks a merged
// JailSpec before anything is planned. Parent process only (allocates, uses yaml-cpp).
//
// Order of use (see cli/run_command.cc):
//   JailSpec spec;                                   // corral's defaults
//   RETURN_IF_ERROR(LoadConfigFile(path, &spec));    // the file overrides what it sets
//   ... flags override the file (ParseMountFlag/ParseEnvFlag/ParseUserFlag help) ...
//   auto problems = Validate(spec);                  // every problem, each with its path
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace YAML {
class Node;
}
#include "runtime/spec/spec.h"

namespace corral::runtime {

// Parses `yaml` and overrides the fields of *spec that it sets; keys it does not mention
// keep their current value. A list or map the file sets (`mounts`, `env`) replaces the
// current one. A section left empty (`limits:` with nothing under it) sets nothing;
// `null` on an optional key (`rootfs`, `workdir`, `*_dir`, `limits.cpu_time`) unsets it.
//
// This checks syntax, types and ranges that can never make sense (zero sizes, negative
// counts, uids that do not fit); host- and cross-field checks are Validate()'s job.
// Every problem found is collected, and the result is one kInvalidArgument Error whose
// message has one line per problem:
//   <origin>:<line>: <key path>: <what is wrong>
// e.g. `corral.yaml:12: limits.memory: expected a size like 512m, got "lots"`.
// namespaces.net: false and network.mode: host are one setting (no network namespace): a
// file that sets either gets both, and one that sets them differently is an error.
// On error *spec may be partly updated; callers discard it.
Status LoadConfigText(const std::string& yaml, const std::string& origin, JailSpec* spec);

// The same for a document already read (LoadYamlDocument, runtime/spec/yaml_documents.h),
// or a mapping made of parts of one: problems carry the lines of the nodes' own marks.
Status LoadConfigDocument(const YAML::Node& doc, const std::string& origin, JailSpec* spec);

// Reads `path` and calls LoadConfigText with the path as origin.
Status LoadConfigFile(const std::string& path, JailSpec* spec);

// Every key path the loader knows ("limits.memory", "mounts[].host_path", "env.*"), in
// table order. For tests and docs: config.example.yaml must mention each one.
std::vector<std::string> ConfigKeyPaths();

// Every problem with a merged spec, as `field.path: what is wrong (got X)`, grouped by
// section; empty means valid. Field paths are config key paths (`limits.memory`,
// `mounts[2].container_path`, `env[0].name`, `argv`). Looks at the host for what a spec names
// there: host paths must exist (stat), a seccomp profile path must be a regular file, and cpus is
// checked against the online CPUs. See config_validate.cc for the full list of rules.
std::vector<std::string> Validate(const JailSpec& spec);

// Validate()'s rules for `mounts` alone (shape, host path exists, reserved and repeated
// container paths), worded `mounts[i].host_path: ...`: for a loader that reads mounts under
// other key names (the design's shape, config_design.h) and names its own keys.
std::vector<std::string> ValidateMounts(const std::vector<MountSpec>& mounts);

// Validate() as one Status: kInvalidArgument listing every problem, one per line.
Status ValidateSpec(const JailSpec& spec);
// ValidateMounts() as one Status, in the same words.
Status ValidateMountsSpec(const std::vector<MountSpec>& mounts);

// kUnsupported unless spec.mode is process: for the paths that only run corral's own jail
// (pools, persistent sandboxes, the daemon), `what` naming the path in the message.
Status RequireProcessMode(const JailSpec& spec, const std::string& what);

// Only the fields a prepared jail takes from the run's spec (argv, env, workdir, timeout,
// output limit: what JailPool's fit check ignores); the rest was validated with the spec
// the jail was built from. Without Validate()'s host reads, which a pooled run cannot spare.
std::vector<std::string> ValidateLateFields(const JailSpec& spec);
Status ValidateLateFieldsSpec(const JailSpec& spec);

// `--mount HOST:CONTAINER[:ro|rw]`; read-only unless `:rw`. Paths are checked by Validate.
Result<MountSpec> ParseMountFlag(const std::string& flag);
// `--volume NAME:CONTAINER[:ro|rw]` (and `-v NAME:...`, a source that is no path): a named
// volume (runtime/volumes/), read-write unless `:ro`. The name is checked here.
Result<MountSpec> ParseVolumeFlag(const std::string& flag);
// A volume's name: 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit
// (it is a directory name, and never an option or a path).
bool IsValidVolumeName(const std::string& name);
inline constexpr const char* kVolumeNameRule =
    "must be 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit";
// `--env NAME=VALUE`; the value may be empty or contain '='. NAME is checked here.
Result<std::pair<std::string, std::string>> ParseEnvFlag(const std::string& flag);
// `--user UID[:GID]`; GID defaults to UID. Decimal ids below 4294967295 ((uid_t)-1).
Result<std::pair<uint32_t, uint32_t>> ParseUserFlag(const std::string& flag);

// `--network MODE`, `--allow RULE`..., `--deny RULE`... (runtime/spec/config_network.cc),
// applied over a spec that has its config file applied. MODE is none, allowlist or host;
// --allow without --network means allowlist. --allow and --deny add to the file's rules and
// are an error with --network none or host. host needs unsafe.host_network: true from the
// file. namespaces.net follows the mode. Rules are parsed by Validate, which names them
// network.allow[i] / network.deny[i]. Returns the problems, each starting with its flag
// ("--network host: ..."); on a problem the spec's network is left as it was.
struct NetworkFlags {
  std::optional<std::string> mode;
  std::vector<std::string> allow;
  std::vector<std::string> deny;
};
std::vector<std::string> ApplyNetworkFlags(const NetworkFlags& flags, JailSpec* spec);

}  // namespace corral::runtime
