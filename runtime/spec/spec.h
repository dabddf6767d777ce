// JailSpec: what the user asked for, after config file and flags are merged, before
// anything is resolved against the host. Plain data; Validate() (runtime/spec/config.h) checks
// it and Plan() (runtime/run/planner.h) turns it into a jail::JailPlan.
//
// Defaults here are corral's documented defaults (config.example.yaml repeats them).
// The modes (mode, oci_runtime, network.mode, cgroups.driver, landlock.enabled, identity,
// python.scan.mode) are enums parsed where they are read (runtime/spec/modes.h): a
// JailSpec never holds a value outside a mode's set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/spec/modes.h"

namespace corral::runtime {

inline constexpr int64_t kMiB = 1024 * 1024;
inline constexpr int64_t kGiB = 1024 * kMiB;

// Which namespaces a jail gets. The mount namespace is not optional: the fresh root
// needs it.
struct NamespaceSpec {
  bool pid = true;
  bool uts = true;
  bool ipc = true;
  bool net = true;
  bool cgroup = true;

  bool operator==(const NamespaceSpec&) const = default;
};

// One extra bind mount (`mounts:` in config, `--mount`/`-v` on the command line).
struct MountSpec {
  MountSpec() = default;
  // A bind mount of a host path (what most callers make).
  MountSpec(std::string host, std::string container, bool ro)
      : host_path(std::move(host)), container_path(std::move(container)), read_only(ro) {}

  std::string host_path;
  std::string container_path;
  bool read_only = true;
  // A named volume (runtime/volumes/): given instead of host_path. Attaching it
  // (runtime/volumes/volume_attach.h) fills in what follows; none of it is configurable.
  std::string volume;
  // host_path is a file system image (a volume with a size), mounted through a loop device.
  bool image = false;
  // The ids the volume's files have on disk. When they are not the sandbox user's host ids,
  // the mount is id-mapped so that the sandbox user sees them as its own.
  std::optional<uint32_t> disk_uid;
  std::optional<uint32_t> disk_gid;

  bool operator==(const MountSpec&) const = default;
};

struct LimitsSpec {
  int64_t memory_bytes = 512 * kMiB;        // cgroup memory limit; swap is always off
  double cpus = 1.0;                        // cgroup CPU bandwidth, in cores
  int64_t pids = 256;                       // cgroup pids limit
  double timeout_seconds = 600;             // wall clock; 0 = none
  std::optional<int64_t> cpu_time_seconds;  // RLIMIT_CPU; unset = none
  int64_t output_limit_bytes = 10 * kMiB;   // per stream, captured mode
  int64_t tmp_size_bytes = 256 * kMiB;      // the jail's one tmpfs (/tmp, $HOME, ...)
  int64_t file_size_bytes = 1 * kGiB;       // RLIMIT_FSIZE
  int64_t open_files = 1024;                // RLIMIT_NOFILE
  double kill_grace_seconds = 2;            // SIGTERM -> SIGKILL on timeout

  bool operator==(const LimitsSpec&) const = default;
};

struct CgroupSpec {
  CgroupDriverChoice driver = CgroupDriverChoice::kAuto;  // auto | v2 | v1
  std::string parent = "corral";  // relative to each hierarchy's root, or absolute path

  bool operator==(const CgroupSpec&) const = default;
};

// Everything that weakens isolation lives here and is logged when used.
struct UnsafeSpec {
  bool allow_root = false;                // permits uid 0 / gid 0 in the jail
  bool allow_missing_limits = false;      // run even if a cgroup limit cannot be applied
  bool allow_unconfined_seccomp = false;  // permits seccomp profile "unconfined"
  bool host_network = false;              // no network namespace (namespaces.net: false needs it)
  // Test fixtures only: these names resolve to these addresses for the allow-list proxy,
  // and such an address may be loopback or private (otherwise always refused). name -> IP.
  std::vector<std::pair<std::string, std::string>> network_resolve;

  bool operator==(const UnsafeSpec&) const = default;
};

// What the jail may reach (`network:` in config, --network on the command line).
//   none      an empty network namespace with `lo` up (the default)
//   allowlist the same namespace plus corral's proxy and resolver on its loopback
//             (runtime/net/): only names on `allow` and not on `deny` are reached
//   host      no network namespace: needs unsafe.host_network (namespaces.net follows)
struct NetworkSpec {
  NetworkMode mode = NetworkMode::kNone;
  // Rules (runtime/net/policy.h): "pypi.org", "*.github.com:443", "api.example.com:8443",
  // "*" (any public address), "10.1.0.0/16:5432". Deny wins over allow.
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  int64_t max_connections = 64;      // open proxied connections at once, per sandbox
  std::optional<int64_t> max_bytes;  // total bytes through the proxy; unset = no cap

  bool operator==(const NetworkSpec&) const = default;
};

// Landlock, a second filesystem fence beside the mount namespace (`landlock:` in config,
// --landlock on the command line; runtime/run/landlock_plan.h derives its rules).
struct LandlockSpec {
  // auto: where the kernel has it (ABI >= 2); true: refuse to run without it; false: off.
  LandlockMode enabled = LandlockMode::kAuto;
  // Also fence TCP bind/connect where the ABI can (>= 4): network none allows neither,
  // allowlist only connecting to the in-jail proxy and resolver. false for a command that
  // serves on localhost and talks to itself (a dev server and curl).
  bool tcp = true;
  // Test fixture: container paths of `mounts` left out of the rules. It can only take access
  // away (that mount becomes unreachable under Landlock), which shows Landlock fencing
  // on its own where the mount table would allow.
  std::vector<std::string> omit;

  bool operator==(const LandlockSpec&) const = default;
};

// `python:` in config: the policy of `corral code run` (runtime/code/README.md). It
// changes nothing about the jail; the runner applies it inside the jail, around the code.
struct PythonScanSpec {
  ScanMode mode = ScanMode::kDeny;  // deny: a finding refuses the run | warn: run, report | off
  // Globs over dotted names as the code writes them (after import aliases): a reference to
  // a matching name is a finding; "M.*" also makes `import M` one.
  std::vector<std::string> deny_calls = {"os.system",     "os.popen",
                                         "os.exec*",      "os.spawn*",
                                         "subprocess.*",  "pty.spawn",
                                         "pickle.loads",  "pickle.load",
                                         "marshal.loads", "eval",
                                         "exec",          "compile",
                                         "__import__",    "importlib.import_module"};
  std::vector<std::string> deny_modules;  // `import M` / `from M import` of M or M.sub
  // String literals naming these paths or anything under them.
  std::vector<std::string> deny_paths = {"/etc/shadow", "/etc/gshadow", "/etc/sudoers",
                                         "/proc/self/environ"};
  bool deny_environ = true;  // os.environ used whole (printed, copied, iterated)

  bool operator==(const PythonScanSpec&) const = default;
};

struct PythonSpec {
  std::string interpreter = "/usr/bin/python3";  // path inside the jail
  PythonScanSpec scan;
  // Top-level modules the code may import; empty = any. `corral` is always allowed.
  std::vector<std::string> allowlist;
  // corral.secure_command's tools: (name, absolute path), resolved when the config loads.
  std::vector<std::pair<std::string, std::string>> commands;
  int64_t command_output_limit_bytes = 1 * kMiB;  // per stream of one secure_command.run

  bool operator==(const PythonSpec&) const = default;
};

struct JailSpec {
  // How the jail is run: "process" (corral's own jailer, runtime/run/) or "container" (the
  // same spec as an OCI bundle run by crun or runc, runtime/oci/); oci_runtime picks it:
  // auto (crun, then runc) | crun | runc | an absolute path. `mode:` in config,
  // `sandbox.mode` in the process-sandbox design's shape (runtime/spec/config_design.h).
  RunMode mode = RunMode::kProcess;
  OciRuntimeChoice oci_runtime;  // auto

  std::vector<std::string> argv;  // the command; argv[0] looked up in PATH if no '/'
  std::vector<std::pair<std::string, std::string>> env;  // added to the default env

  std::optional<std::string> rootfs;             // directory tree used as / instead of host dirs
  std::optional<std::string> skills_dir;         // -> /mnt/skills (ro)
  std::optional<std::string> user_data_dir;      // -> /mnt/user-data (rw)
  std::optional<std::string> acp_workspace_dir;  // -> /mnt/acp-workspace (ro)
  std::vector<MountSpec> mounts;
  std::optional<std::string> workdir;  // default /mnt/user-data/workspace or /
  // The workspace (user_data_dir's workspace/) as an overlay: the sandbox's writes land in
  // corral's upper layer and the host directory stays as it was until `corral commit`
  // (runtime/sandboxes/workspace_overlay.h). Persistent sandboxes only; root only.
  bool workspace_overlay = false;
  // Where its layers are (<state>/overlays/<name>): set by CreateSandbox. Not configurable.
  std::string workspace_overlay_dir;
  // Its upper layer's directory in workspace_overlay_dir: "upper", or "upper-<id>" once a
  // snapshot has put a new one in (runtime/snapshots/). Set by corral. Not configurable.
  std::string workspace_upper;
  // Read-only layers between the upper layer and the host's workspace, topmost first: the
  // snapshots the sandbox was created from or took (<state>/snapshots/<tag>/layer). Set by
  // corral (create --from, fork, snapshot), never from a spec a caller sends.
  std::vector<std::string> workspace_layers;

  std::string hostname = "sandbox";
  // A user namespace for the jail even when corral runs as root (as non-root it always has
  // one): runtime/run/user_ns_plan.h.
  bool rootless = false;
  // Who the jail's uid/gid are on the host in root mode (runtime/run/identity.h): auto
  // (a reserved id where `corral setup ids` reserved a range), reserved (required), or
  // host-uid (the same numbers on the host, as before).
  IdentityMode identity = IdentityMode::kAuto;
  // What picks the reserved id's slot when there is no user_data_dir: a persistent
  // sandbox's name (set by corral create, kept in its record). Not configurable.
  std::string identity_key;
  // A warm sandbox claimed for a thread (runtime/pool/warm_claim.h): the key its ids were
  // made from (its placeholder's), which then wins over user_data_dir; its thread's
  // directories are bound with an id mapping from the thread's ids to these. Not
  // configurable.
  std::string identity_claimed_key;
  uint32_t uid = 1000;
  uint32_t gid = 1000;

  NamespaceSpec namespaces;
  std::string seccomp_profile = "default";  // default | strict | unconfined | /abs/path.json
  LimitsSpec limits;
  CgroupSpec cgroups;
  NetworkSpec network;
  LandlockSpec landlock;
  UnsafeSpec unsafe;
  PythonSpec python;  // for `corral code run` only

  bool operator==(const JailSpec&) const = default;
};

}  // namespace corral::runtime
