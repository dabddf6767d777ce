#include "runtime/spec/config_network.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/spec/config.h"

namespace corral::runtime {
namespace config_schema {
namespace {

// A `network:` section as written. corral's keys fill the NetworkSpec; the design's
// synonym is kept apart until FinishNetworkSection turns it into a mode and an allow list.
struct NetworkSection : NetworkSpec {
  std::optional<bool> enabled;
  std::optional<std::vector<std::string>> allow_domains;
};

const Table<NetworkSection>& NetworkTable() {
  static const Table<NetworkSection> table = {
      ModeKey<NetworkMode, NetworkSection>("mode", &NetworkSection::mode),
      StringListKey<NetworkSection>("allow", &NetworkSection::allow),
      StringListKey<NetworkSection>("deny", &NetworkSection::deny),
      IntKey<NetworkSection>("max_connections", &NetworkSection::max_connections, 1),
      OptionalSizeKey<NetworkSection>("max_bytes", &NetworkSection::max_bytes),
      {"enabled",
       [](const YAML::Node& n, const Where& w, Reader& r, NetworkSection& s) {
         bool v;
         if (r.Bool(n, w, &v)) s.enabled = v;
       }},
      {"allow_domains",
       [](const YAML::Node& n, const Where& w, Reader& r, NetworkSection& s) {
         std::vector<std::string> v;
         if (n.IsNull() || r.StringList(n, w, &v)) s.allow_domains = std::move(v);
       }},
  };
  return table;
}

// Where `key` of the mapping `map` (itself at `parent`) sits; the parent's line if absent.
Where KeyWhere(const YAML::Node& map, const Where& parent, const std::string& key) {
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) {
      return Child(parent, key, entry.first);
    }
  }
  return {parent.path.empty() ? key : parent.path + "." + key, parent.line};
}

std::string PresentKeys(const YAML::Node& map, std::initializer_list<const char*> keys) {
  std::string out;
  for (const char* key : keys) {
    if (map[key]) out += (out.empty() ? "" : ", ") + std::string(key);
  }
  return out;
}

// Does the `network:` node choose a mode: by `mode`, by the design's keys, or by a
// non-empty `allow` (which means allowlist)?
bool SetsMode(const YAML::Node& n) {
  if (!n || !n.IsMap()) return false;  // (an absent key's node throws on IsMap)
  const YAML::Node allow = n["allow"];
  return n["mode"] || n["enabled"] || n["allow_domains"] ||
         (allow && allow.IsSequence() && allow.size() > 0);
}

// The design's form: `enabled: false` is mode none; `enabled: true` (or left out) is an
// allow-list of `allow_domains`, or without it of "*": every public address - never the
// host's network, which only mode host (and unsafe.host_network) gives.
void ApplyDesignForm(const YAML::Node& n, const Where& w, Reader& r, NetworkSection& s) {
  const Where domains_at = KeyWhere(n, w, "allow_domains");
  if (!s.enabled.value_or(true)) {
    if (s.allow_domains && !s.allow_domains->empty()) {
      r.Report(domains_at, "given with enabled: false, which reaches nothing; remove one");
      return;
    }
    s.mode = NetworkMode::kNone;
    s.allow.clear();
  } else if (s.allow_domains && s.allow_domains->empty()) {
    r.Report(domains_at, "empty; nothing would be reachable - use enabled: false");
  } else {
    s.mode = NetworkMode::kAllowlist;
    s.allow = s.allow_domains ? *s.allow_domains : std::vector<std::string>{"*"};
  }
}

void FinishNetworkSection(const YAML::Node& n, const Where& w, Reader& r, NetworkSection& s) {
  const std::string design = PresentKeys(n, {"enabled", "allow_domains"});
  const std::string corral = PresentKeys(n, {"mode", "allow", "deny"});
  if (design.empty()) {
    if (SetsMode(n) && !n["mode"]) s.mode = NetworkMode::kAllowlist;  // `allow` alone
  } else if (!corral.empty()) {
    r.Report(w, design + " (the process-sandbox design's form) cannot be mixed with " + corral +
                    "; write either enabled/allow_domains or mode/allow/deny");
  } else if ((!n["enabled"] || s.enabled) && (!n["allow_domains"] || s.allow_domains)) {
    ApplyDesignForm(n, w, r, s);  // (a key of a wrong type was reported already)
  }
}

}  // namespace

Rule<JailSpec> NetworkSectionKey() {
  return {"network",
          [](const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
            NetworkSection section;
            static_cast<NetworkSpec&>(section) = spec.network;
            ApplyTable(NetworkTable(), n, w, r, section);
            if (n.IsMap()) FinishNetworkSection(n, w, r, section);
            spec.network = static_cast<const NetworkSpec&>(section);
          },
          Suffixed(NetworkTable(), ".")};
}

Rule<UnsafeSpec> NetworkResolveKey() {
  return {"network_resolve",
          [](const YAML::Node& n, const Where& w, Reader& r, UnsafeSpec& u) {
            if (n.IsNull()) return;
            // NAME: address, or NAME: [address, ...] for a name with IPv4 and IPv6.
            auto entries = ReadNamedStrings(n, w, r, "address",
                                            [](const YAML::Node& v, const Where& at, Reader& rd,
                                               std::vector<std::string>* out) {
                                              if (v.IsSequence()) return rd.StringList(v, at, out);
                                              out->resize(1);
                                              return rd.String(v, at, &(*out)[0]);
                                            });
            if (entries) u.network_resolve = std::move(*entries);
          },
          {".*"}};
}

void ReconcileHostNetwork(const YAML::Node& doc, Reader& r, JailSpec& spec) {
  if (!doc.IsMap()) return;
  ReconcileHostNetwork(doc, doc["network"], KeyWhere(doc, Where{}, "network"), r, spec);
}

void ReconcileHostNetwork(const YAML::Node& doc, const YAML::Node& network, const Where& network_at,
                          Reader& r, JailSpec& spec) {
  if (!doc.IsMap() || !r.problems().empty()) return;
  const YAML::Node namespaces = doc["namespaces"];
  const bool net_set = namespaces && namespaces.IsMap() && namespaces["net"];
  const bool mode_set = SetsMode(network);
  NetworkMode& mode = spec.network.mode;
  const bool host = mode == NetworkMode::kHost;
  if (mode_set && net_set) {
    if (host != spec.namespaces.net) return;  // they agree
    const char* key = network["mode"]            ? "mode"
                      : network["enabled"]       ? "enabled"
                      : network["allow_domains"] ? "allow_domains"
                                                 : "allow";
    r.Report(KeyWhere(network, network_at, key),
             "network mode " + std::string(Name(mode)) +
                 " contradicts namespaces.net: " + (spec.namespaces.net ? "true" : "false") +
                 " (namespaces.net: false is network.mode: host); set only one of them");
  } else if (mode_set) {
    spec.namespaces.net = !host;
  } else if (net_set && !spec.namespaces.net) {
    mode = NetworkMode::kHost;
  } else if (net_set && host) {
    // namespaces.net: true over a caller's (the daemon config's) host mode
    mode = NetworkMode::kNone;
  }
}

}  // namespace config_schema

std::vector<std::string> ApplyNetworkFlags(const NetworkFlags& flags, JailSpec* spec) {
  std::vector<std::string> problems;
  if (!flags.mode && flags.allow.empty() && flags.deny.empty()) return problems;
  if (flags.mode) {
    const std::string flag = "--network " + *flags.mode;
    const std::optional<NetworkMode> mode = ParseMode<NetworkMode>(*flags.mode);
    if (!mode) {
      problems.push_back(flag + ": expected " + AllowedModes<NetworkMode>());
    } else if (*mode == NetworkMode::kHost && !spec->unsafe.host_network) {
      problems.push_back(flag +
                         ": the host's network needs unsafe.host_network: true in a "
                         "--config file");
    } else if (*mode != NetworkMode::kAllowlist && !(flags.allow.empty() && flags.deny.empty())) {
      const std::string rule =
          flags.allow.empty() ? "--deny " + flags.deny[0] : "--allow " + flags.allow[0];
      problems.push_back(rule + ": rules need --network allowlist (got " + flag + ")");
    }
    if (!problems.empty()) return problems;
    spec->network.mode = *mode;
  } else if (!flags.allow.empty()) {
    spec->network.mode = NetworkMode::kAllowlist;
  }
  spec->namespaces.net = spec->network.mode != NetworkMode::kHost;
  std::vector<std::string>& allow = spec->network.allow;
  std::vector<std::string>& deny = spec->network.deny;
  allow.insert(allow.end(), flags.allow.begin(), flags.allow.end());
  deny.insert(deny.end(), flags.deny.begin(), flags.deny.end());
  return problems;
}

}  // namespace corral::runtime
