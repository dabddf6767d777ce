#include "runtime/spec/config_explain.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "base/files.h"
#include "runtime/spec/config.h"
#include "runtime/spec/config_design.h"
#include "runtime/spec/yaml_documents.h"

namespace corral::runtime {
namespace {

using Json = nlohmann::ordered_json;  // keys in config.example.yaml's order

// A size as the loader reads it, exactly: the largest binary unit that divides it.
std::string SizeText(int64_t bytes) {
  constexpr std::pair<int64_t, const char*> kUnits[] = {
      {1024 * kGiB, "t"}, {kGiB, "g"}, {kMiB, "m"}, {1024, "k"}};
  for (const auto& [unit, suffix] : kUnits) {
    if (bytes > 0 && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

Json Optional(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }

// Seconds and cores: a whole number as an integer, else the shortest text that reads back.
Json Number(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 1e15) {
    return static_cast<int64_t>(v);
  }
  return v;
}

Json LimitsJson(const LimitsSpec& l) {
  return {{"memory", SizeText(l.memory_bytes)},
          {"cpus", Number(l.cpus)},
          {"pids", l.pids},
          {"timeout", Number(l.timeout_seconds)},
          {"cpu_time", l.cpu_time_seconds ? Json(*l.cpu_time_seconds) : Json(nullptr)},
          {"output", SizeText(l.output_limit_bytes)},
          {"tmp_size", SizeText(l.tmp_size_bytes)},
          {"file_size", SizeText(l.file_size_bytes)},
          {"open_files", l.open_files},
          {"kill_grace", Number(l.kill_grace_seconds)}};
}

Json NetworkJson(const NetworkSpec& n) {
  return {{"mode", std::string(Name(n.mode))},
          {"allow", n.allow},
          {"deny", n.deny},
          {"max_connections", n.max_connections},
          {"max_bytes", n.max_bytes ? Json(SizeText(*n.max_bytes)) : Json(nullptr)}};
}

// NAME: address, or NAME: [addresses] for a name given several.
Json ResolveJson(const std::vector<std::pair<std::string, std::string>>& entries) {
  Json out = Json::object();
  for (const auto& [name, address] : entries) {
    if (!out.contains(name)) {
      out[name] = address;
    } else if (out[name].is_string()) {
      out[name] = Json::array({out[name], address});
    } else {
      out[name].push_back(address);
    }
  }
  return out;
}

Json PythonJson(const PythonSpec& p) {
  Json commands = Json::array();
  for (const auto& [name, path] : p.commands) commands.push_back(path);  // resolved: absolute
  return {{"interpreter", p.interpreter},
          {"scan",
           {{"mode", std::string(Name(p.scan.mode))},
            {"deny_calls", p.scan.deny_calls},
            {"deny_modules", p.scan.deny_modules},
            {"deny_paths", p.scan.deny_paths},
            {"deny_environ", p.scan.deny_environ}}},
          {"allowlist", p.allowlist},
          {"commands", commands},
          {"command_output_limit", SizeText(p.command_output_limit_bytes)}};
}

// Every key of corral's form with the spec's value.
Json SpecJson(const JailSpec& s) {
  Json env = Json::object();
  for (const auto& [name, value] : s.env) env[name] = value;
  Json mounts = Json::array();
  for (const MountSpec& m : s.mounts) {
    Json mount = {
        {m.volume.empty() ? "host_path" : "volume", m.volume.empty() ? m.host_path : m.volume},
        {"container_path", m.container_path},
        {"read_only", m.read_only}};
    mounts.push_back(std::move(mount));
  }
  const LandlockSpec& l = s.landlock;
  // A YAML boolean where the file would write one (LandlockEnabledKey reads it back).
  const Json landlock_enabled =
      l.enabled == LandlockMode::kAuto ? Json("auto") : Json(l.enabled == LandlockMode::kOn);
  const std::string mode(Name(s.mode));
  const std::string driver(Name(s.cgroups.driver));
  return {{"mode", mode},
          {"rootfs", Optional(s.rootfs)},
          {"hostname", s.hostname},
          {"workspace_overlay", s.workspace_overlay},
          {"rootless", s.rootless},
          {"user", {{"uid", s.uid}, {"gid", s.gid}}},
          {"workdir", Optional(s.workdir)},
          {"env", env},
          {"namespaces",
           {{"pid", s.namespaces.pid},
            {"uts", s.namespaces.uts},
            {"ipc", s.namespaces.ipc},
            {"net", s.namespaces.net},
            {"cgroup", s.namespaces.cgroup}}},
          {"network", NetworkJson(s.network)},
          {"skills_dir", Optional(s.skills_dir)},
          {"user_data_dir", Optional(s.user_data_dir)},
          {"acp_workspace_dir", Optional(s.acp_workspace_dir)},
          {"mounts", mounts},
          {"landlock", {{"enabled", landlock_enabled}, {"tcp", l.tcp}, {"omit", l.omit}}},
          {"seccomp", {{"profile", s.seccomp_profile}}},
          {"limits", LimitsJson(s.limits)},
          {"cgroups", {{"driver", driver}, {"parent", s.cgroups.parent}}},
          {"unsafe",
           {{"allow_root", s.unsafe.allow_root},
            {"allow_missing_limits", s.unsafe.allow_missing_limits},
            {"allow_unconfined_seccomp", s.unsafe.allow_unconfined_seccomp},
            {"host_network", s.unsafe.host_network},
            {"network_resolve", ResolveJson(s.unsafe.network_resolve)}}},
          {"python", PythonJson(s.python)}};
}

// `full` without what equals `defaults`: a section keeps only its keys that differ.
// Sections whose keys depend on each other are kept whole once one differs: network (a
// non-empty allow without mode would read as allowlist).
Json Differences(const Json& full, const Json& defaults) {
  static const std::set<std::string> kWhole = {"network"};
  Json out = Json::object();
  for (const auto& [key, value] : full.items()) {
    const Json& base = defaults.at(key);
    if (value == base) continue;
    out[key] = value.is_object() && !kWhole.count(key) && key != "env" && key != "network_resolve"
                   ? Differences(value, base)
                   : value;
  }
  return out;
}

// A YAML scalar as JSON: the types a reader of the JSON form expects (true, 3, 0.5, null).
Json ScalarJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str") return s;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i;
  if (auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      ec == std::errc() && end == s.data() + s.size() && !s.empty()) {
    return i;
  }
  double d;
  if (auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      ec == std::errc() && end == s.data() + s.size() && !s.empty() && std::isfinite(d)) {
    return d;
  }
  return s;
}

Json NodeJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      return ScalarJson(n);
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : n) out.push_back(NodeJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& entry : n) out[entry.first.Scalar()] = NodeJson(entry.second);
      return out;
    }
    default:
      return nullptr;
  }
}

// Strings the loader would not read back as the same string if written plainly.
bool NeedsQuotes(const std::string& s) {
  static const std::set<std::string> kNulls = {"", "~", "null", "Null", "NULL"};
  return kNulls.count(s) > 0;
}

void EmitJson(YAML::Emitter& out, const Json& v) {
  if (v.is_object()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
    out << YAML::BeginMap;
    for (const auto& [key, value] : v.items()) {
      out << YAML::Key << key << YAML::Value;
      EmitJson(out, value);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    const bool scalars = std::all_of(v.begin(), v.end(),
                                     [](const Json& e) { return !e.is_object() && !e.is_array(); });
    out << (scalars ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const Json& item : v) EmitJson(out, item);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
    out << s;
  } else if (v.is_null()) {
    out << YAML::Null;
  } else if (v.is_boolean()) {
    out << (v.get<bool>() ? "true" : "false");
  } else if (v.is_number_float()) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get<double>());
    out << std::string(buf, ec == std::errc() ? end : buf);
  } else {
    out << v.dump();
  }
}

}  // namespace

Result<ExplainedConfig> ExplainConfigText(const std::string& text, const std::string& origin,
                                          bool all) {
  JailSpec spec;
  ASSIGN_OR_RETURN(const YAML::Node doc, LoadYamlDocument(text, origin));
  RETURN_IF_ERROR(LoadConfigDocument(doc, origin, &spec));
  Json native = SpecJson(spec);
  if (!all) native = Differences(native, SpecJson(JailSpec{}));
  // What a jail only checks, as written.
  if (doc.IsMap()) {
    if (const YAML::Node unsafe = doc["unsafe"]; unsafe && unsafe.IsMap() && unsafe["no_auth"]) {
      native["unsafe"]["no_auth"] = NodeJson(unsafe["no_auth"]);
    }
    for (const char* key : {"sandbox", "skills", "server"}) {
      const YAML::Node section = doc[key];
      if (!section || section.IsNull()) continue;
      // The design's `sandbox:` is what the keys above already say.
      if (std::string(key) == "sandbox" && config_schema::IsDesignSandbox(section)) continue;
      native[key] = NodeJson(section);
    }
  }
  ExplainedConfig out;
  out.json = native.dump(2);
  YAML::Emitter emitter;
  emitter.SetIndent(2);
  EmitJson(emitter, native);
  out.yaml = std::string(emitter.c_str()) + "\n";
  return out;
}

Result<ExplainedConfig> ExplainConfigFile(const std::string& path, bool all) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ExplainConfigText(text, path, all);
}

}  // namespace corral::runtime
