// NulField(): the first string in a parsed JSON document (a value or an object key) that
// holds a NUL byte, named by its field path ("argv[1]", "env[0][1]", "sandbox").
//
// Why: JSON allows "\u0000" in strings, and corral hands request strings to the kernel
// (paths, argv, env) as C strings, which end at the first NUL: a path validated whole would
// be used cut short. Every front end that takes JSON (the pool protocol's frames, the
// agent tools' arguments, the coming HTTP API) refuses such a document before using any
// of it. Header-only; any process.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace corral {

inline std::optional<std::string> NulField(const nlohmann::json& j, const std::string& at = "") {
  auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  if (j.is_string()) {
    if (has_nul(j.get_ref<const std::string&>())) return at.empty() ? "(the value)" : at;
    return std::nullopt;
  }
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      if (auto f = NulField(j[i], at + "[" + std::to_string(i) + "]")) return f;
    }
    return std::nullopt;
  }
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      const std::string field = at.empty() ? key : at + "." + key;
      if (has_nul(key)) return "a key of " + (at.empty() ? std::string("the object") : at);
      if (auto f = NulField(value, field)) return f;
    }
  }
  return std::nullopt;
}

// "<field>: contains a NUL byte" for the first such string, or nullopt.
inline std::optional<std::string> NulProblem(const nlohmann::json& j) {
  auto field = NulField(j);
  if (!field) return std::nullopt;
  return *field + ": contains a NUL byte";
}

}  // namespace corral
