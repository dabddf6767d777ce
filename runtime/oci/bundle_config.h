// An OCI bundle's config.json (runtime spec 1.x), read for corral's runc-compatible
// runtime (corral-runc, runtime/oci/runc_*.h): the typed, checked form of every field that
// runtime honours.
//
// The rule: a field corral-runc does not implement is refused with its JSON path and the
// reason ("linux.intelRdt: not supported by corral-runc"), never silently ignored; a field
// that is present with its "nothing to do" value (an empty list, an empty object, false)
// is accepted. Unknown keys are refused the same way, except under `annotations` (free
// form) and the keys that runtime spec itself marks as platform-specific for platforms
// other than Linux (`solaris`, `windows`, `vm`, `zos`), which must be absent.
//
// Parent process only (allocates, uses nlohmann-json).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace corral::runtime::oci {

struct OciMount {
  std::string destination;  // absolute path inside the container
  std::string type;         // "bind", "tmpfs", "proc", "sysfs", "devpts", "mqueue", "cgroup", ...
  std::string source;       // for binds: a host path (relative ones: to the bundle directory)
  std::vector<std::string> options;  // as written ("ro", "rbind", "nosuid", "mode=755", ...)
};

// linux.namespaces[]: type is one of pid, network, mount, ipc, uts, user, cgroup, time;
// a non-empty path means "join this namespace" rather than "make a new one".
struct OciNamespace {
  std::string type;
  std::string path;
};

struct OciIdMapping {
  uint32_t container_id = 0;
  uint32_t host_id = 0;
  uint32_t size = 0;
};

struct OciRlimit {
  int resource = 0;  // RLIMIT_* number, from the name ("RLIMIT_NOFILE")
  uint64_t soft = 0;
  uint64_t hard = 0;
};

// process.capabilities: each set as capability numbers (CAP_* from the name "CAP_CHOWN").
// A name the running kernel does not know is an error naming it.
struct OciCapabilities {
  std::vector<int> bounding;
  std::vector<int> effective;
  std::vector<int> permitted;
  std::vector<int> inheritable;
  std::vector<int> ambient;
};

struct OciUser {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::optional<uint32_t> umask;
  std::vector<uint32_t> additional_gids;
};

struct OciProcess {
  bool terminal = false;
  std::optional<std::pair<uint32_t, uint32_t>> console_size;  // height, width
  OciUser user;
  std::vector<std::string> args;  // non-empty
  std::vector<std::string> env;   // "KEY=value"
  std::string cwd = "/";          // absolute
  OciCapabilities capabilities;   // all empty when absent
  std::vector<OciRlimit> rlimits;
  bool no_new_privileges = false;
  std::optional<int> oom_score_adj;
};

// linux.devices[]: a node the runtime makes in the container's /dev.
struct OciDevice {
  std::string path;  // absolute, under /dev
  char type = 'c';   // 'c' (or 'u') character, 'b' block, 'p' fifo
  int64_t major = 0;
  int64_t minor = 0;
  std::optional<uint32_t> file_mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

// linux.resources.devices[]: one rule of the device cgroup, in order.
struct OciDeviceRule {
  bool allow = false;
  char type = 'a';               // 'a' all, 'c', 'b'
  std::optional<int64_t> major;  // absent: any (*)
  std::optional<int64_t> minor;  // absent: any (*)
  std::string access = "rwm";    // a subset of "rwm"
};

struct OciResources {
  // memory
  std::optional<int64_t> memory_limit;  // bytes; -1 = unlimited
  std::optional<int64_t> memory_swap;   // memory + swap, bytes; -1 = unlimited
  std::optional<int64_t> memory_reservation;
  // cpu
  std::optional<uint64_t> cpu_shares;
  std::optional<int64_t> cpu_quota;  // microseconds per period; -1 = unlimited
  std::optional<uint64_t> cpu_period;
  std::string cpuset_cpus;
  std::string cpuset_mems;
  // pids
  std::optional<int64_t> pids_limit;  // <= 0: unlimited
  std::vector<OciDeviceRule> devices;
};

struct BundleConfig {
  std::string oci_version;
  std::string bundle_dir;  // absolute (LoadBundleConfig)
  std::string root_path;   // absolute: root.path resolved against bundle_dir
  bool root_readonly = false;
  std::string hostname;
  std::string domainname;
  std::vector<OciMount> mounts;  // in order
  OciProcess process;            // required by create
  std::map<std::string, std::string> annotations;

  // linux
  std::vector<OciNamespace> namespaces;
  std::vector<OciIdMapping> uid_mappings;
  std::vector<OciIdMapping> gid_mappings;
  std::map<std::string, std::string> sysctl;
  OciResources resources;
  std::string cgroups_path;  // as written: a cgroupfs path or systemd "slice:prefix:name"
  std::vector<OciDevice> devices;
  // linux.seccomp as written, minus the keys corral checks here (flags, listenerPath): the
  // text corral's own profile compiler (jail/seccomp.h) takes. Absent: no seccomp field.
  std::optional<std::string> seccomp_profile_json;
  std::vector<std::string> masked_paths;
  std::vector<std::string> readonly_paths;
  std::string rootfs_propagation;  // "", "private", "rprivate", "slave", "rslave", ...

  // The namespace of `type`, if the config asks for one.
  const OciNamespace* FindNamespace(const std::string& type) const;
};

// Checks `doc` (a parsed config.json). `bundle_dir` (absolute) resolves a relative
// root.path. Errors: kInvalidArgument, message "config.json: <json path>: <reason>",
// e.g. "config.json: process.capabilities.bounding[2]: unknown capability \"CAP_FOO\"".
Result<BundleConfig> ParseBundleConfig(const nlohmann::json& doc, const std::string& bundle_dir);

// One section on its own, checked as inside a config: an exec's process.json (`path`
// "process") and update's linux.resources ("linux.resources"). Errors as above.
Result<OciProcess> ParseOciProcess(const nlohmann::json& process, const std::string& path);
Result<OciResources> ParseOciResources(const nlohmann::json& resources, const std::string& path);

// The error every check of a config's field gives: "config.json: <path>: <reason>".
Error ConfigFieldError(const std::string& path, const std::string& reason);

// Reads and checks `<bundle_dir>/config.json` (bundle_dir made absolute first).
Result<BundleConfig> LoadBundleConfig(const std::string& bundle_dir);

}  // namespace corral::runtime::oci
