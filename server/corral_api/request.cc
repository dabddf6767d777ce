#include "server/corral_api/request.h"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "base/json_input.h"
#include "runtime/code/code_payload.h"
#include "runtime/sandboxes/snapshot_store.h"
#include "runtime/spec/config.h"
#include "runtime/spec/sizes.h"
#include "runtime/volumes/volume_store.h"

namespace corral::server {
namespace {

using nlohmann::json;

// "limits.memory: expected a size ..." -> ("spec.limits.memory", the whole line). The
// loader's lines carry "<origin>:<line>: " first; Validate()'s do not.
std::pair<std::string, std::string> SpecProblem(std::string line) {
  if (line.rfind("spec:", 0) == 0) {
    line = line.substr(5);
    size_t colon = line.find(": ");
    // "1: limits.memory: ..." or " limits.memory: ..."
    if (colon != std::string::npos &&
        std::all_of(line.begin(), line.begin() + colon, [](char c) { return std::isdigit(c); })) {
      line = line.substr(colon + 2);
    }
    while (!line.empty() && line[0] == ' ') line.erase(0, 1);
  }
  const size_t colon = line.find(": ");
  std::string path = colon == std::string::npos ? "" : line.substr(0, colon);
  if (path == "top level" || path.find(' ') != std::string::npos) path.clear();
  return {path.empty() ? "spec" : "spec." + path, "spec." + line};
}

ApiError SpecErrors(const std::vector<std::string>& lines) {
  ApiError e{422, "invalid_spec", "", "", {}};
  for (const std::string& line : lines) {
    auto [field, text] = SpecProblem(line);
    if (e.field.empty()) e.field = field;
    e.problems.push_back(text);
  }
  e.message = e.problems.empty() ? "invalid spec" : e.problems.front();
  if (e.problems.size() > 1) {
    e.message += " (and " + std::to_string(e.problems.size() - 1) + " more problems)";
  }
  return e;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

// A host directory a caller may mount: absolute, normalized, no symlink in it (realpath
// gives it back unchanged), and strictly below the daemon's sandbox.base_dir.
std::string HostPathProblem(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] != '/') return "must be an absolute path";
  if (path.find("//") != std::string::npos || path.find("/./") != std::string::npos ||
      path.find("/../") != std::string::npos || path.ends_with("/..") || path.ends_with("/.") ||
      (path.size() > 1 && path.back() == '/')) {
    return "must be normalized (no '.', '..', '//' or trailing '/')";
  }
  char real[PATH_MAX];
  char base[PATH_MAX];
  if (base_dir.empty() || ::realpath(base_dir.c_str(), base) == nullptr) {
    return "host mounts need the daemon's sandbox.base_dir to exist";
  }
  const std::string base_s = base;
  if (path.rfind(base_s + "/", 0) != 0) return "must lie under sandbox.base_dir (" + base_s + ")";
  if (::realpath(path.c_str(), real) == nullptr) return "does not exist";
  if (real != path) return "must not contain a symlink";
  // A volume mounted by path would bypass its count of users (one writer, or readers).
  if (auto volumes = runtime::VolumesDir();
      volumes && (path == *volumes || path.rfind(*volumes + "/", 0) == 0)) {
    return "lies in corral's volumes; mount a volume by name: {\"volume\": NAME, ...}";
  }
  return "";
}

std::optional<ApiError> CheckSpecObject(const json& spec, const std::string& base_dir) {
  if (!spec.is_object()) return InvalidField("spec", "expected an object");
  const std::set<std::string> allowed(std::begin(kSpecKeys), std::end(kSpecKeys));
  for (const auto& [key, value] : spec.items()) {
    if (allowed.count(key) == 0) {
      return InvalidField(
          "spec." + key,
          "cannot be set over the API (allowed: hostname, user, workdir, env, "
          "namespaces, mounts, seccomp, limits, network; the rest is the daemon's config)");
    }
  }
  if (spec.contains("seccomp") && spec["seccomp"].is_object() &&
      spec["seccomp"].contains("profile") && spec["seccomp"]["profile"].is_string()) {
    const std::string profile = spec["seccomp"]["profile"].get<std::string>();
    if (!profile.empty() && profile[0] == '/') {
      return InvalidField("spec.seccomp.profile",
                          "a host file cannot be named over the API; use a built-in profile name");
    }
  }
  if (spec.contains("mounts") && spec["mounts"].is_array()) {
    size_t i = 0;
    for (const json& m : spec["mounts"]) {
      const std::string field = "spec.mounts[" + std::to_string(i++) + "].host_path";
      if (!m.is_object() || !m.contains("host_path") || !m["host_path"].is_string()) continue;
      std::string why = HostPathProblem(m["host_path"].get<std::string>(), base_dir);
      if (!why.empty()) return InvalidField(field, why);
    }
  }
  return std::nullopt;
}

}  // namespace

ApiError InvalidField(const std::string& field, const std::string& message, int status) {
  return ApiError{status, "invalid_field", field + ": " + message, field, {}};
}

std::variant<json, ApiError> ParseBodyObject(const std::string& body) {
  auto parsed = ParseJsonInput(body, kHttpBodyJsonLimits);
  if (auto* error = std::get_if<JsonInputError>(&parsed)) {
    return ApiError{
        400, "invalid_json", "the body is not JSON that corral reads: " + error->message, "", {}};
  }
  json& j = std::get<json>(parsed);
  if (!j.is_object()) {
    return ApiError{400, "invalid_json", "the body must be a JSON object", "", {}};
  }
  return std::move(j);
}

HttpResponse ApiError::ToResponse() const {
  json e = {{"code", code}, {"message", message}};
  e["field"] = field.empty() ? json(nullptr) : json(field);
  if (problems.size() > 1) e["problems"] = problems;
  return HttpResponse::Json(status, {{"error", e}});
}

std::string SandboxNameProblem(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 64) return "is longer than 64 characters";
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return "may contain only letters, digits, '_' and '-'";
    }
  }
  return "";
}

std::variant<SandboxCreate, ApiError> ParseSandboxCreate(const std::string& body,
                                                         const runtime::JailSpec& base,
                                                         const std::string& base_dir) {
  auto parsed = ParseBodyObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  json& j = std::get<json>(parsed);
  SandboxCreate out;
  out.spec = base;
  for (const auto& [key, value] : j.items()) {
    if (key != "name" && key != "spec" && key != "idle_timeout" && key != "from") {
      return InvalidField(key, "unknown field (expected name, spec, idle_timeout, from)");
    }
  }
  if (j.contains("from") && !j["from"].is_null()) {
    if (!j["from"].is_string()) return InvalidField("from", "expected a snapshot's tag");
    out.from_snapshot = j["from"].get<std::string>();
    if (Status st = runtime::CheckSnapshotTag(out.from_snapshot); !st) {
      return InvalidField("from", st.error().message());
    }
  }
  if (j.contains("name") && !j["name"].is_null()) {
    if (!j["name"].is_string()) return InvalidField("name", "expected a string");
    out.name = j["name"].get<std::string>();
    if (std::string why = SandboxNameProblem(out.name); !why.empty())
      return InvalidField("name", why);
  }
  if (j.contains("idle_timeout") && !j["idle_timeout"].is_null()) {
    const json& t = j["idle_timeout"];
    if (!t.is_number() || t.get<double>() < 0 || !std::isfinite(t.get<double>())) {
      return InvalidField("idle_timeout", "expected a number of seconds >= 0 (0 = never)");
    }
    out.idle_timeout_seconds = t.get<double>();
  }
  if (j.contains("spec") && !j["spec"].is_null()) {
    if (auto problem = CheckSpecObject(j["spec"], base_dir)) return *problem;
    // The config loader reads JSON (it is YAML): the same keys, sizes and messages.
    if (Status st = runtime::LoadConfigText(j["spec"].dump(), "spec", &out.spec); !st) {
      return SpecErrors(Lines(st.error().message()));
    }
  }
  runtime::JailSpec checked = out.spec;
  checked.argv = {"corral-init"};  // what CreateSandbox validates
  if (auto problems = runtime::Validate(checked); !problems.empty()) return SpecErrors(problems);
  return out;
}

namespace {

std::optional<ApiError> ReadExecFields(const json& j, runtime::ExecRequest* r) {
  if (j.contains("env") && !j["env"].is_null()) {
    if (!j["env"].is_object())
      return InvalidField("env", "expected an object of NAME: value strings");
    for (const auto& [name, value] : j["env"].items()) {
      if (!value.is_string()) return InvalidField("env." + name, "expected a string");
      // The CLI's -e check: the name's syntax, no NUL anywhere.
      auto kv = runtime::ParseEnvFlag(name + "=" + value.get<std::string>());
      if (!kv) return InvalidField("env." + name, kv.error().message());
      r->env.push_back(*kv);
    }
  }
  if (j.contains("workdir") && !j["workdir"].is_null()) {
    if (!j["workdir"].is_string()) return InvalidField("workdir", "expected a string");
    r->workdir = j["workdir"].get<std::string>();
    if (r->workdir->empty() || (*r->workdir)[0] != '/') {
      return InvalidField("workdir", "must be an absolute path inside the sandbox");
    }
  }
  if (j.contains("timeout") && !j["timeout"].is_null()) {
    const json& t = j["timeout"];
    if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 0) {
      return InvalidField("timeout", "expected seconds >= 0 (0 = no limit)");
    }
    r->timeout_seconds = t.get<double>();
  }
  if (j.contains("output_limit") && !j["output_limit"].is_null()) {
    const json& o = j["output_limit"];
    int64_t bytes = 0;
    if (o.is_number_integer()) {
      bytes = o.get<int64_t>();
    } else if (o.is_string()) {
      auto size = runtime::ParseSize(o.get<std::string>());
      if (!size) return InvalidField("output_limit", size.error().message());
      bytes = *size;
    } else {
      return InvalidField("output_limit", "expected bytes (an integer) or a size like \"1m\"");
    }
    if (bytes <= 0) return InvalidField("output_limit", "must be at least 1 byte");
    r->output_limit_bytes = bytes;
  }
  return std::nullopt;
}

}  // namespace

std::variant<runtime::ExecRequest, ApiError> ParseExecRequest(const std::string& body,
                                                              const std::string& sandbox,
                                                              bool* stream) {
  auto parsed = ParseBodyObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  json& j = std::get<json>(parsed);
  static const std::set<std::string> kKeys = {"argv",    "command", "env",
                                              "workdir", "timeout", "output_limit"};
  for (const auto& [key, value] : j.items()) {
    if (kKeys.count(key) == 0 && !(stream && key == "stream")) {
      return InvalidField(key,
                          "unknown field (expected argv or command, env, workdir, timeout, "
                          "output_limit, stream)");
    }
  }
  if (stream && j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) return InvalidField("stream", "expected true or false");
    *stream = j["stream"].get<bool>();
  }
  runtime::ExecRequest r;
  r.sandbox = sandbox;
  r.io.capture_output = true;
  const bool has_argv = j.contains("argv") && !j["argv"].is_null();
  const bool has_command = j.contains("command") && !j["command"].is_null();
  if (has_argv == has_command) return InvalidField("argv", "give exactly one of argv and command");
  if (has_argv) {
    const json& a = j["argv"];
    if (!a.is_array() || a.empty())
      return InvalidField("argv", "expected a non-empty list of strings");
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string())
        return InvalidField("argv[" + std::to_string(i) + "]", "expected a string");
      r.argv.push_back(a[i].get<std::string>());
    }
  } else {
    if (!j["command"].is_string() || j["command"].get<std::string>().empty()) {
      return InvalidField("command", "expected a non-empty string");
    }
    r.argv = {"/bin/bash", "-c", j["command"].get<std::string>()};
  }
  for (const std::string& a : r.argv) {
    if (a.find('\0') != std::string::npos) {
      return InvalidField(has_argv ? "argv" : "command", "must not contain a NUL byte");
    }
  }
  if (auto problem = ReadExecFields(j, &r)) return *problem;
  return r;
}

std::variant<runtime::code::CodeRequest, ApiError> ParseCodeRequest(
    const std::string& body, const std::string& sandbox, const runtime::PythonSpec& policy) {
  auto parsed = ParseBodyObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  json& j = std::get<json>(parsed);
  static const std::set<std::string> kKeys = {"code", "lang", "timeout"};
  for (const auto& [key, value] : j.items()) {
    if (kKeys.count(key) == 0)
      return InvalidField(key, "unknown field (expected code, lang, timeout)");
  }
  runtime::code::CodeRequest r;
  r.sandbox = sandbox;
  r.policy = policy;
  if (!j.contains("code") || !j["code"].is_string())
    return InvalidField("code", "expected a string");
  r.code = j["code"].get<std::string>();
  if (Status st = runtime::code::CheckCode(r.code); !st) {
    return InvalidField("code", st.error().message());
  }
  if (j.contains("lang") && !j["lang"].is_null()) {
    if (!j["lang"].is_string() || j["lang"].get<std::string>() != "python") {
      return InvalidField("lang", "expected \"python\" (the only language so far)");
    }
  }
  if (j.contains("timeout") && !j["timeout"].is_null()) {
    const json& t = j["timeout"];
    if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 0) {
      return InvalidField("timeout", "expected seconds >= 0 (0 = no limit)");
    }
    r.timeout_seconds = t.get<double>();
  }
  return r;
}

}  // namespace corral::server
