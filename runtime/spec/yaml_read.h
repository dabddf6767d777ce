// What the config loaders of the `sandbox:`/`skills:` and `server:` sections share: every
// problem collected as one "<key path>: <what>" line (all reported at once), and a typed
// read of a YAML value that reports a wrong type or a NUL byte by its key path.
// Parent side.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <type_traits>
#include <utility>

#include "base/result.h"

namespace corral::runtime {

class YamlProblems {
 public:
  // `prefix` goes before every key ("server." for the server section's keys).
  explicit YamlProblems(std::string prefix = "") : prefix_(std::move(prefix)) {}
  void Add(const std::string& path, const std::string& what) {
    lines_ += prefix_ + path + ": " + what + "\n";
  }
  Status ToStatus() const {
    if (lines_.empty()) return Ok();
    return Error(ErrorCode::kInvalidArgument, lines_.substr(0, lines_.size() - 1));
  }

 private:
  std::string prefix_;
  std::string lines_;
};

// Reads `n` as T into *out; false (with a problem for `path`) on a wrong type. Every string
// here becomes a path, a mount, an address or an env value, which the kernel reads cut at
// a NUL ("\0" in a double-quoted YAML scalar): refused before any other check.
template <typename T>
bool ReadYaml(const YAML::Node& n, const std::string& path, YamlProblems* p, T* out) {
  try {
    *out = n.as<T>();
    if constexpr (std::is_same_v<T, std::string>) {
      if (out->find('\0') != std::string::npos) {
        p->Add(path, "must not contain a NUL byte");
        out->clear();
        return false;
      }
    }
    return true;
  } catch (const YAML::Exception&) {
    p->Add(path, "wrong type (got \"" + (n.IsScalar() ? n.Scalar() : std::string("?")) + "\")");
    return false;
  }
}

}  // namespace corral::runtime
