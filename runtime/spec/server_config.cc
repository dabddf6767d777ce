#include "runtime/spec/server_config.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>

#include "base/files.h"
#include "runtime/spec/sizes.h"
#include "runtime/spec/utf8_text.h"
#include "runtime/spec/yaml_documents.h"
#include "runtime/spec/yaml_read.h"

namespace corral::runtime {
namespace {

using Problems = YamlProblems;

void Positive(const YAML::Node& n, const std::string& key, Problems* p, int* out) {
  if (ReadYaml(n, key, p, out) && *out <= 0) p->Add(key, "must be > 0");
}
void NonNegative(const YAML::Node& n, const std::string& key, Problems* p, int* out) {
  if (ReadYaml(n, key, p, out) && *out < 0) p->Add(key, "must be >= 0");
}
void Seconds(const YAML::Node& n, const std::string& key, Problems* p, double* out) {
  if (ReadYaml(n, key, p, out) && !(*out > 0)) p->Add(key, "must be > 0 seconds");
}
void Size(const YAML::Node& n, const std::string& key, Problems* p, int64_t* out, int64_t min) {
  std::string text;
  if (!ReadYaml(n, key, p, &text)) return;
  auto v = ParseSize(text);
  if (!v) return p->Add(key, v.error().message());
  if (*v < min) return p->Add(key, "must be at least " + FormatSize(min));
  *out = *v;
}

using KeyReader = std::function<void(const YAML::Node&, Problems*, ServerConfig*)>;

const std::map<std::string, KeyReader>& Keys() {
  static const std::map<std::string, KeyReader> keys = {
      {"listen", [](auto& n, auto* p, auto* c) { ReadYaml(n, "listen", p, &c->listen); }},
      {"allow_remote",
       [](auto& n, auto* p, auto* c) { ReadYaml(n, "allow_remote", p, &c->allow_remote); }},
      {"allowed_hosts",
       [](auto& n, auto* p, auto* c) { ReadYaml(n, "allowed_hosts", p, &c->allowed_hosts); }},
      {"api_key", [](auto& n, auto* p, auto* c) { ReadYaml(n, "api_key", p, &c->api_key); }},
      {"api_key_file",
       [](auto& n, auto* p, auto* c) { ReadYaml(n, "api_key_file", p, &c->api_key_file); }},
      {"io_threads",
       [](auto& n, auto* p, auto* c) { Positive(n, "io_threads", p, &c->io_threads); }},
      {"max_header_bytes",
       [](auto& n, auto* p, auto* c) {
         Size(n, "max_header_bytes", p, &c->max_header_bytes, 1024);
       }},
      {"max_body_bytes",
       [](auto& n, auto* p, auto* c) { Size(n, "max_body_bytes", p, &c->max_body_bytes, 1024); }},
      {"header_timeout",
       [](auto& n, auto* p, auto* c) { Seconds(n, "header_timeout", p, &c->header_timeout); }},
      {"body_timeout",
       [](auto& n, auto* p, auto* c) { Seconds(n, "body_timeout", p, &c->body_timeout); }},
      {"keepalive_timeout",
       [](auto& n, auto* p, auto* c) {
         Seconds(n, "keepalive_timeout", p, &c->keepalive_timeout);
       }},
      {"max_connections",
       [](auto& n, auto* p, auto* c) { Positive(n, "max_connections", p, &c->max_connections); }},
      {"max_connections_per_client",
       [](auto& n, auto* p, auto* c) {
         Positive(n, "max_connections_per_client", p, &c->max_connections_per_client);
       }},
      {"max_in_flight",
       [](auto& n, auto* p, auto* c) { Positive(n, "max_in_flight", p, &c->max_in_flight); }},
      {"max_sandboxes",
       [](auto& n, auto* p, auto* c) { Positive(n, "max_sandboxes", p, &c->max_sandboxes); }},
      {"max_execs", [](auto& n, auto* p, auto* c) { Positive(n, "max_execs", p, &c->max_execs); }},
      {"session_slots",
       [](auto& n, auto* p, auto* c) { NonNegative(n, "session_slots", p, &c->session_slots); }},
      {"shutdown_grace",
       [](auto& n, auto* p, auto* c) { Seconds(n, "shutdown_grace", p, &c->shutdown_grace); }},
      {"access_log",
       [](auto& n, auto* p, auto* c) { ReadYaml(n, "access_log", p, &c->access_log); }},
      {"metrics_need_key",
       [](auto& n, auto* p, auto* c) { ReadYaml(n, "metrics_need_key", p, &c->metrics_need_key); }},
  };
  return keys;
}

}  // namespace

Status LoadServerConfig(const YAML::Node& server, ServerConfig* config) {
  if (!server || server.IsNull()) return Ok();
  Problems p("server.");
  if (!server.IsMap()) {
    p.Add("", "must be a mapping");
    return p.ToStatus();
  }
  for (const auto& kv : server) {
    const std::string key = kv.first.as<std::string>();
    auto it = Keys().find(key);
    if (it == Keys().end()) {
      std::string known;
      for (const auto& [k, f] : Keys()) known += (known.empty() ? "" : ", ") + k;
      p.Add(key, "unknown key; known keys: " + known);
      continue;
    }
    it->second(kv.second, &p, config);
  }
  if (!config->access_log.empty() && config->access_log != "off" && config->access_log[0] != '/') {
    p.Add("access_log", "must be \"\" (stderr), \"off\" or an absolute path");
  }
  return p.ToStatus();
}

Status LoadServerConfigFile(const std::string& path, ServerConfig* config) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  // Not const: operator[] of a const node gives an invalid node for a missing key, which
  // throws when asked its type; a mutable one gives an undefined node, as the readers expect.
  ASSIGN_OR_RETURN(YAML::Node root, LoadYamlDocument(text, path));
  if (!root.IsMap()) return Ok();
  Status st = LoadServerConfig(root["server"], config);
  if (!st) return st.error().WithContext(path);
  const YAML::Node unsafe = root["unsafe"];
  if (unsafe.IsMap() && unsafe["no_auth"]) {
    try {
      config->no_auth = unsafe["no_auth"].as<bool>();
    } catch (const YAML::Exception&) {
      return Error(ErrorCode::kInvalidArgument, path + ": unsafe.no_auth: expected true or false");
    }
  }
  return Ok();
}

}  // namespace corral::runtime
