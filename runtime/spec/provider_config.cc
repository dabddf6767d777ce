#include "runtime/spec/provider_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <set>
#include <string>
#include <type_traits>

#include "base/files.h"
#include "runtime/spec/config.h"
#include "runtime/spec/config_design.h"
#include "runtime/spec/utf8_text.h"
#include "runtime/spec/yaml_documents.h"
#include "runtime/spec/yaml_read.h"

namespace corral::runtime {

bool IsValidEnvName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

namespace {

// DeerFlow keys of other providers (aio, provisioner): accepted and ignored, so one
// DeerFlow config file works unchanged.
const std::set<std::string> kIgnoredSandboxKeys = {"image",
                                                   "port",
                                                   "container_prefix",
                                                   "thread_data_mounts",
                                                   "ownership",
                                                   "overflow_policy",
                                                   "acquire_timeout",
                                                   "burst_limit",
                                                   "health_check_skip_seconds",
                                                   "network",
                                                   "prewarm"};

const char* const kReservedPrefixes[] = {"/mnt/skills", "/mnt/acp-workspace", "/mnt/user-data"};

using Problems = YamlProblems;

ProviderKind ParseUse(const std::string& use, Problems* p, ProviderKind fallback) {
  if (use == "local" || use.find("LocalSandboxProvider") != std::string::npos) {
    return ProviderKind::kLocal;
  }
  if (use == "jail" || use.find("corral") != std::string::npos) return ProviderKind::kJail;
  if (use == "aio" || use.find("AioSandboxProvider") != std::string::npos)
    return ProviderKind::kAio;
  p->Add("sandbox.use", "unsupported provider \"" + use + "\" (corral serves local, jail and aio)");
  return fallback;
}

void ParseMounts(const YAML::Node& n, Problems* p, std::vector<MountSpec>* out) {
  if (!n.IsSequence()) return p->Add("sandbox.mounts", "must be a list");
  for (size_t i = 0; i < n.size(); ++i) {
    std::string where = "sandbox.mounts[" + std::to_string(i) + "]";
    MountSpec m;
    if (!n[i]["host_path"] || !n[i]["container_path"]) {
      p->Add(where, "needs host_path and container_path");
      continue;
    }
    ReadYaml(n[i]["host_path"], where + ".host_path", p, &m.host_path);
    ReadYaml(n[i]["container_path"], where + ".container_path", p, &m.container_path);
    if (n[i]["read_only"]) ReadYaml(n[i]["read_only"], where + ".read_only", p, &m.read_only);
    if (m.host_path.empty() || m.host_path[0] != '/') {
      p->Add(where + ".host_path", "must be absolute");
    }
    if (m.container_path.empty() || m.container_path[0] != '/') {
      p->Add(where + ".container_path", "must be absolute");
    }
    for (const char* r : kReservedPrefixes) {
      std::string rs = r;
      if (m.container_path == rs || m.container_path.rfind(rs + "/", 0) == 0) {
        p->Add(where + ".container_path", "is reserved (" + rs + ")");
      }
    }
    out->push_back(m);
  }
}

void ParseAudit(const YAML::Node& n, Problems* p, AuditLogConfig* a) {
  if (!n.IsMap()) return p->Add("sandbox.audit_log", "must be a mapping");
  for (const auto& kv : n) {
    std::string key = kv.first.as<std::string>();
    std::string where = "sandbox.audit_log." + key;
    if (key == "path") {
      ReadYaml(kv.second, where, p, &a->path);
    } else if (key == "max_bytes") {
      if (ReadYaml(kv.second, where, p, &a->max_bytes) && a->max_bytes < 4096) {
        p->Add(where, "must be >= 4096");
      }
    } else if (key == "keep") {
      if (ReadYaml(kv.second, where, p, &a->keep) && a->keep < 1) p->Add(where, "must be >= 1");
    } else if (key == "enabled") {
      ReadYaml(kv.second, where, p, &a->enabled);
    } else {
      p->Add(where, "unknown key");
    }
  }
}

void ParseEnvironment(const YAML::Node& n, Problems* p, ProviderConfig* c) {
  if (!n.IsMap()) return p->Add("sandbox.environment", "must be a mapping");
  for (const auto& kv : n) {
    std::string key = kv.first.as<std::string>();
    std::string value;
    if (!IsValidEnvName(key)) {
      p->Add("sandbox.environment." + key, "not a valid variable name");
      continue;
    }
    if (!ReadYaml(kv.second, "sandbox.environment." + key, p, &value)) continue;
    if (!value.empty() && value[0] == '$') {
      const char* host = std::getenv(value.c_str() + 1);
      value = host ? host : "";
    }
    c->environment.emplace_back(key, value);
  }
}

void PositiveInt(const YAML::Node& n, const std::string& where, Problems* p, int* out,
                 bool allow_zero) {
  if (ReadYaml(n, where, p, out) && (*out < 0 || (!allow_zero && *out == 0))) {
    p->Add(where, allow_zero ? "must be >= 0" : "must be > 0");
  }
}

constexpr int kMaxWarmSandboxes = 64;

void ParseSandboxKey(const std::string& key, const YAML::Node& v, Problems* p, ProviderConfig* c) {
  std::string w = "sandbox." + key;
  std::string s;
  if (key == "use") {
    if (ReadYaml(v, w, p, &s)) c->use = ParseUse(s, p, c->use);
  } else if (key == "allow_host_bash") {
    ReadYaml(v, w, p, &c->allow_host_bash);
  } else if (key == "mounts") {
    c->mounts.clear();
    ParseMounts(v, p, &c->mounts);
  } else if (key == "bash_output_max_chars") {
    PositiveInt(v, w, p, &c->bash_output_max_chars, true);
  } else if (key == "read_file_output_max_chars") {
    PositiveInt(v, w, p, &c->read_file_output_max_chars, true);
  } else if (key == "ls_output_max_chars") {
    PositiveInt(v, w, p, &c->ls_output_max_chars, true);
  } else if (key == "bash_command_timeout") {
    if (ReadYaml(v, w, p, &c->bash_command_timeout) && c->bash_command_timeout <= 0) {
      p->Add(w, "must be > 0");
    }
  } else if (key == "replicas") {
    PositiveInt(v, w, p, &c->replicas, false);
  } else if (key == "warm") {
    // Each one is an idle sandbox nobody uses yet (an init and a cgroup): a handful does.
    if (ReadYaml(v, w, p, &c->warm) && (c->warm < 0 || c->warm > kMaxWarmSandboxes)) {
      p->Add(w, "must be between 0 and " + std::to_string(kMaxWarmSandboxes) + " (got " +
                    std::to_string(c->warm) + ")");
    }
  } else if (key == "idle_timeout") {
    if (!v.IsNull() && ReadYaml(v, w, p, &c->idle_timeout) && c->idle_timeout < 0) {
      p->Add(w, "must be >= 0");
    }
  } else if (key == "idle_action") {
    if (ReadYaml(v, w, p, &s)) {
      if (s == "destroy" || s == "pause") {
        c->idle_action = s == "pause" ? ProviderConfig::IdleAction::kPause
                                      : ProviderConfig::IdleAction::kDestroy;
      } else {
        p->Add(w, "must be destroy or pause (got \"" + s + "\")");
      }
    }
  } else if (key == "paused_timeout") {
    if (ReadYaml(v, w, p, &c->paused_timeout) && c->paused_timeout < 0) p->Add(w, "must be >= 0");
  } else if (key == "resume_on_call") {
    ReadYaml(v, w, p, &c->resume_on_call);
  } else if (key == "environment") {
    ParseEnvironment(v, p, c);
  } else if (key == "base_dir") {
    if (ReadYaml(v, w, p, &c->base_dir) && (c->base_dir.empty() || c->base_dir[0] != '/')) {
      p->Add(w, "must be an absolute path");
    }
  } else if (key == "audit_log") {
    ParseAudit(v, p, &c->audit_log);
  } else if (key == "provisioner_url" || key == "aio_url") {
    std::string* url = key == "aio_url" ? &c->aio_url : &c->provisioner_url;
    if (ReadYaml(v, w, p, url) && url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
      p->Add(w, "must be an http:// or https:// URL");
    }
  } else if (key == "provisioner_api_key") {
    if (ReadYaml(v, w, p, &c->provisioner_api_key) && !c->provisioner_api_key.empty() &&
        c->provisioner_api_key[0] == '$') {
      const char* host = std::getenv(c->provisioner_api_key.c_str() + 1);
      c->provisioner_api_key = host ? host : "";
    }
  } else if (!kIgnoredSandboxKeys.count(key)) {
    p->Add(w, "unknown key");
  }
}

}  // namespace

Status LoadProviderConfig(const YAML::Node& sandbox, const YAML::Node& skills, ProviderConfig* c) {
  Problems p;
  if (sandbox && !sandbox.IsNull()) {
    if (!sandbox.IsMap()) {
      p.Add("sandbox", "must be a mapping");
    } else {
      for (const auto& kv : sandbox) ParseSandboxKey(kv.first.as<std::string>(), kv.second, &p, c);
    }
  }
  if (skills && !skills.IsNull()) {
    if (!skills.IsMap()) {
      p.Add("skills", "must be a mapping");
    } else {
      for (const auto& kv : skills) {
        std::string key = kv.first.as<std::string>();
        std::string s;
        if (key == "path") {
          if (ReadYaml(kv.second, "skills.path", &p, &s)) {
            if (s.empty() || s[0] != '/') p.Add("skills.path", "must be an absolute path");
            c->skills_path = s;
          }
        } else if (key == "container_path") {
          if (ReadYaml(kv.second, "skills.container_path", &p, &s)) {
            if (s.empty() || s[0] != '/') p.Add("skills.container_path", "must be absolute");
            c->skills_container_path = s;
          }
        } else if (key != "deferred_discovery" && key != "skill_scan") {
          p.Add("skills." + key, "unknown key");
        }
      }
    }
  }
  // Paused sandboxes go after a second, longer timeout: a shorter one would remove them
  // before they were ever paused.
  if (c->idle_action == ProviderConfig::IdleAction::kPause && c->paused_timeout > 0 &&
      c->paused_timeout <= c->idle_timeout) {
    p.Add("sandbox.paused_timeout", "must be longer than sandbox.idle_timeout (" +
                                        std::to_string(static_cast<int64_t>(c->idle_timeout)) +
                                        " s), or 0 (never)");
  }
  if (c->idle_action == ProviderConfig::IdleAction::kPause && c->idle_timeout == 0) {
    p.Add("sandbox.idle_action", "pause needs sandbox.idle_timeout > 0 (when to pause)");
  }
  if (c->use == ProviderKind::kAio && c->provisioner_url.empty() && c->aio_url.empty()) {
    p.Add("sandbox.provisioner_url",
          "the aio provider needs provisioner_url (or aio_url, one server for every thread)");
  }
  return p.ToStatus();
}

Status LoadToolConfigFile(const std::string& path, ProviderConfig* config, JailSpec* spec) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  // Not const: operator[] of a const node gives an invalid node for a missing key, which
  // throws when asked its type; a mutable one gives an undefined node, as the readers expect.
  ASSIGN_OR_RETURN(YAML::Node root, LoadYamlDocument(text, path));
  if (!root.IsMap()) {
    if (root.IsNull()) return Ok();
    return Error(ErrorCode::kInvalidArgument, path + ": the top level must be a mapping");
  }
  // A `sandbox:` in the process-sandbox design's shape is the jail's, not the tool layer's
  // (config_design.h): it goes to the main loader with the rest.
  const bool design = config_schema::IsDesignSandbox(root["sandbox"]);
  Status own = LoadProviderConfig(design ? YAML::Node() : root["sandbox"], root["skills"], config);
  if (!own) return own.error().WithContext(path);
  // The main loader rejects keys it does not know: it gets the file's own nodes without
  // ours (force_insert keeps each key and value node, marks included, so its messages
  // carry this file's line numbers).
  YAML::Node rest(YAML::NodeType::Map);
  for (const auto& kv : root) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if ((key != "sandbox" || design) && key != "skills") rest.force_insert(kv.first, kv.second);
  }
  if (rest.size() == 0) return Ok();
  return LoadConfigDocument(rest, path, spec);
}

std::vector<std::string> SecretValues(const ProviderConfig& config) {
  std::vector<std::string> out;
  for (const auto& [k, v] : config.environment) {
    if (v.size() >= 8) out.push_back(v);
  }
  return out;
}

}  // namespace corral::runtime
