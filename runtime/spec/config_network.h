// The config file's `network:` section and `unsafe.network_resolve` (config.cc's schema
// includes them), and how a file's network mode and its namespaces.net agree. Internal to
// runtime/spec; the flags' counterpart, ApplyNetworkFlags, is in config.h. Parent process.
#pragma once

#include <yaml-cpp/yaml.h>

#include "runtime/spec/config_schema.h"
#include "runtime/spec/spec.h"

namespace corral::runtime::config_schema {

// `network:` in corral's form (mode, allow, deny) or the process-sandbox design's
// (enabled, allow_domains); max_connections and max_bytes go with either. A non-empty
// `allow` without `mode` means allowlist.
Rule<JailSpec> NetworkSectionKey();

// `unsafe.network_resolve: {NAME: ADDRESS}` (or NAME: [ADDRESS, ...]): one entry per
// address, replacing the current ones. Addresses are checked by Validate.
Rule<UnsafeSpec> NetworkResolveKey();

// namespaces.net: false and network.mode: host say the same thing (no network namespace).
// A file may say it either way and the other follows; saying both, differently, is an
// error. Call after the whole document `doc` was applied; does nothing if it had problems.
void ReconcileHostNetwork(const YAML::Node& doc, Reader& r, JailSpec& spec);
// The same with the network section found elsewhere than doc["network"] (the design's
// sandbox.network, config_design.h), at `network_at`.
void ReconcileHostNetwork(const YAML::Node& doc, const YAML::Node& network, const Where& network_at,
                          Reader& r, JailSpec& spec);

}  // namespace corral::runtime::config_schema
