// The process-sandbox design's own config shape, read as corral's keys. Internal to
// runtime/spec: config.cc's loader calls it (and provider_config.cc's split of a tool
// config). Parent process only (uses yaml-cpp).
//
//   sandbox:                                   corral's key
//     mode: process                            mode                    (process | container)
//     timeout: 30                              limits.timeout          (seconds, > 0)
//     limits:
//       memory_mb: 256                         limits.memory           (MiB)
//       cpu_seconds: 10                        limits.cpu_time         (RLIMIT_CPU)
//       max_processes: 16                      limits.pids
//     filesystem:
//       root: /srv/work                        user_data_dir           (rw at /mnt/user-data)
//       mounts: [{host, guest, readonly}]      mounts[] {host_path, container_path, read_only}
//     network: {enabled, allow_domains}        network                 (config_network.h)
//     python: {version: "3", allowlist: [..]}  python (version 3.N -> interpreter
//     /usr/bin/python3.N) env: {OMP_NUM_THREADS: 2}                env
//
// Which `sandbox:` is which: the top-level `sandbox:` is also DeerFlow's tool-layer section
// (provider_config.h). It is read in the design's shape when it has one of the design's own
// keys - mode, timeout, limits, filesystem, python, env - or a `network` mapping with the
// design's `enabled` or `allow_domains`; DeerFlow's has none of these (its network is
// {mode: open|isolated|allowlist}). A design-shaped section refuses DeerFlow's keys.
//
// When a file uses the design's shape, the design's defaults replace corral's for what it
// covers: 256 MiB memory, 10 s CPU time, 16 processes, 30 s wall clock, network off. Each
// setting is written in one place: a corral key that the design's section also sets in the
// same file (limits.memory beside sandbox.limits.memory_mb) is an error naming both.
#pragma once

#include <yaml-cpp/yaml.h>

#include "runtime/spec/config_schema.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::config_schema {

// True if `sandbox` (the document's top-level `sandbox:` value, possibly undefined) is in
// the design's shape, by the rule above.
bool IsDesignSandbox(const YAML::Node& sandbox);

// `mode: process | container` (JailSpec::mode): top-level in corral's form, sandbox.mode in
// the design's. Validate() decides whether this build can run the mode.
Rule<JailSpec> RuntimeModeKey();

// The design's defaults (256 MiB, 10 s CPU, 16 processes, 30 s, network none), applied to
// *spec before a design-shaped document's keys.
void ApplyDesignDefaults(JailSpec& spec);

// The top-level `sandbox:` key: the design's shape when IsDesignSandbox, else DeerFlow's
// tool-layer section, which a jail only checks (provider_config.h).
Rule<JailSpec> SandboxSectionKey();

// After a design-shaped document was applied: a setting written both ways, filesystem.root
// and mounts checked on the host (so that problems name sandbox.filesystem...), the
// interpreter python.version names, and namespaces.net against the design's network. Then
// reconciles namespaces.net with the network mode as ReconcileHostNetwork does.
void FinishDesignSandbox(const YAML::Node& doc, Reader& r, JailSpec& spec);

}  // namespace corral::runtime::config_schema
