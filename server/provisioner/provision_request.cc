#include "server/provisioner/provision_request.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <set>

#include "base/json_input.h"
#include "tools/providers/thread_dirs.h"

namespace corral::server {
namespace {

using nlohmann::json;

json Problem(const std::string& type, const std::string& field, const std::string& msg) {
  return {{"type", type}, {"loc", json::array({"body", field})}, {"msg", msg}};
}

RequestError Unprocessable(json problems) { return {422, {{"detail", std::move(problems)}}}; }
RequestError BadMount(const std::string& why) { return {400, {{"detail", why}}}; }

bool IdChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// Optional bool field: absent or null keeps the default.
void ReadBool(const json& body, const char* field, bool* out, json* problems) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return;
  if (!it->is_boolean()) {
    problems->push_back(Problem("bool_type", field, "Input should be a valid boolean"));
    return;
  }
  *out = it->get<bool>();
}

// "/a/b" with no empty, "." or ".." component and no trailing '/'.
bool Normalized(const std::string& path) {
  if (path.size() < 2 || path[0] != '/' || path.back() == '/') return false;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

// The deepest existing ancestor of `path` (itself if it exists).
std::string ExistingAncestor(std::string path) {
  struct stat st;
  while (path.size() > 1 && ::lstat(path.c_str(), &st) != 0) path = path.substr(0, path.rfind('/'));
  return path.empty() ? "/" : path;
}

std::optional<RequestError> CheckMount(const ExtraMount& m, const std::string& base) {
  const std::string where = "extra mount " + m.container_path + ": ";
  bool allowed = false;
  for (const char* target : kAllowedExtraMountTargets) allowed |= m.container_path == target;
  if (!allowed) {
    return BadMount("extra mount container_path " + m.container_path + " is not allowed");
  }
  if (m.host_path.empty() || m.host_path[0] != '/') {
    return BadMount(where + "host_path must be absolute");
  }
  if (m.host_path.find('\0') != std::string::npos || !Normalized(m.host_path)) {
    return BadMount(where + "host_path must be normalized (no //, . or .. components)");
  }
  const std::string base_real = Canonical(base);
  if (base_real.empty()) return BadMount(where + "the server's base directory does not exist");
  // No symlink anywhere on the existing part: it could lead out of the base directory.
  const std::string existing = ExistingAncestor(m.host_path);
  if (Canonical(existing) != existing) {
    return BadMount(where + "host_path must not pass through a symlink");
  }
  if (m.host_path.rfind(base_real + "/", 0) != 0 && m.host_path != base_real) {
    return BadMount(where + "host_path must be under the server's base directory");
  }
  if (m.read_only && existing != m.host_path) {
    return BadMount(where + "host_path does not exist (a read-only mount must)");
  }
  return std::nullopt;
}

std::optional<RequestError> ParseMounts(const json& list, const std::string& base,
                                        std::vector<ExtraMount>* out) {
  if (list.size() > kMaxExtraMounts) {
    return BadMount("too many extra mounts: at most " + std::to_string(kMaxExtraMounts));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string field = "extra_mounts." + std::to_string(i);
    if (!e.is_object() || !e.contains("host_path") || !e["host_path"].is_string() ||
        !e.contains("container_path") || !e["container_path"].is_string() ||
        (e.contains("read_only") && !e["read_only"].is_boolean())) {
      return Unprocessable(json::array({Problem(
          "model_type", field,
          "Input should be an object {host_path: str, container_path: str, read_only: bool}")}));
    }
    ExtraMount m{e["host_path"].get<std::string>(), e["container_path"].get<std::string>(),
                 e.value("read_only", false)};
    if (!seen.insert(m.container_path).second) {
      return BadMount("duplicate extra mount container_path " + m.container_path);
    }
    if (auto bad = CheckMount(m, base)) return bad;
    out->push_back(std::move(m));
  }
  return std::nullopt;
}

void ReadIds(const json& body, CreateParams* p, json* problems) {
  auto id = body.find("sandbox_id");
  if (id == body.end()) {
    problems->push_back(Problem("missing", "sandbox_id", "Field required"));
  } else if (!id->is_string()) {
    problems->push_back(Problem("string_type", "sandbox_id", "Input should be a valid string"));
  } else if (std::string why = SandboxIdProblem(id->get<std::string>()); !why.empty()) {
    problems->push_back(Problem("string_pattern_mismatch", "sandbox_id", why));
  } else {
    p->sandbox_id = id->get<std::string>();
  }
  auto thread = body.find("thread_id");
  if (thread != body.end() && !thread->is_null()) {
    if (!thread->is_string()) {
      problems->push_back(Problem("string_type", "thread_id", "Input should be a valid string"));
    } else if (!runtime::IsValidThreadId(thread->get<std::string>())) {
      problems->push_back(Problem("string_pattern_mismatch", "thread_id",
                                  "String should match pattern '^[A-Za-z0-9_-]{1,64}$'"));
    } else {
      p->thread_id = thread->get<std::string>();
    }
  }
  auto user = body.find("user_id");
  if (user != body.end() && !user->is_null()) {
    if (!user->is_string()) {
      problems->push_back(Problem("string_type", "user_id", "Input should be a valid string"));
    } else if (!runtime::IsValidUserId(user->get<std::string>()) ||
               user->get<std::string>().size() > 128) {
      problems->push_back(Problem("string_pattern_mismatch", "user_id",
                                  "String should match pattern '^[A-Za-z0-9_\\-]+$' (at most "
                                  "128 characters)"));
    } else {
      p->user_id = user->get<std::string>();
    }
  }
}

}  // namespace

std::string SandboxIdProblem(std::string_view id) {
  if (id.empty()) return "sandbox id must not be empty";
  if (id.size() > 64) return "sandbox id is longer than 64 characters";
  for (char c : id) {
    if (!IdChar(c)) return "sandbox id may contain only letters, digits, '_' and '-'";
  }
  return "";
}

std::variant<CreateParams, RequestError> ParseCreateRequest(std::string_view text,
                                                            const std::string& base_dir) {
  auto parsed = ParseJsonInput(text, kHttpBodyJsonLimits);
  if (auto* error = std::get_if<JsonInputError>(&parsed);
      error != nullptr && error->problem != JsonInputProblem::kSyntax) {
    return RequestError{400, {{"detail", error->message}}};
  }
  json body = std::holds_alternative<json>(parsed) ? std::get<json>(std::move(parsed))
                                                   : json(json::value_t::discarded);
  if (body.is_discarded()) {
    return Unprocessable(json::array({{{"type", "json_invalid"},
                                       {"loc", json::array({"body"})},
                                       {"msg", "JSON decode error"}}}));
  }
  if (!body.is_object()) {
    return Unprocessable(json::array({{{"type", "model_attributes_type"},
                                       {"loc", json::array({"body"})},
                                       {"msg", "Input should be a valid JSON object"}}}));
  }
  CreateParams p;
  json problems = json::array();
  ReadIds(body, &p, &problems);
  ReadBool(body, "include_legacy_skills", &p.include_legacy_skills, &problems);
  ReadBool(body, "provision_lark_cli_runtime", &p.provision_lark_cli_runtime, &problems);
  ReadBool(body, "provision_lark_cli_broker", &p.provision_lark_cli_broker, &problems);
  auto mounts = body.find("extra_mounts");
  if (mounts != body.end() && !mounts->is_null() && !mounts->is_array()) {
    problems.push_back(Problem("list_type", "extra_mounts", "Input should be a valid list"));
  }
  if (!problems.empty()) return Unprocessable(std::move(problems));
  if (mounts != body.end() && mounts->is_array()) {
    if (auto bad = ParseMounts(*mounts, base_dir, &p.extra_mounts)) return *bad;
  }
  return p;
}

}  // namespace corral::server
