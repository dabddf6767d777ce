// The config loader's machinery: where a value sits (key path and line), a Reader that
// types YAML values and collects every problem, and tables of Rules, one per key, that
// say what to do with each value. config.cc builds the schema of the config file from
// these; a section with logic of its own has its own file (config_network.h).
// Internal to runtime/spec (the public interface is config.h). Parent process only.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/edit_distance.h"
#include "runtime/spec/modes.h"
#include "runtime/spec/sizes.h"

namespace corral::runtime::config_schema {

// The largest uid/gid a config may name: (uid_t)-1 means "unchanged" to the kernel.
inline constexpr uint32_t kMaxId = std::numeric_limits<uint32_t>::max() - 1;

// Where a value sits: its key path and the 1-based line of its key (0 = unknown).
struct Where {
  std::string path;
  int line = 0;
};

inline Where Child(const Where& parent, const std::string& key, const YAML::Node& key_node) {
  const YAML::Mark mark = key_node.Mark();
  return {parent.path.empty() ? key : parent.path + "." + key, mark.line >= 0 ? mark.line + 1 : 0};
}

inline std::string Quote(const std::string& s) {
  constexpr size_t kMax = 60;
  return "\"" + (s.size() > kMax ? s.substr(0, kMax) + "..." : s) + "\"";
}

// yaml-cpp tags plain scalars "?"; quoted ones "!" (or !!str when explicit).
inline bool IsQuoted(const YAML::Node& node) {
  return node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str";
}

inline std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return IsQuoted(node) ? "the string " + Quote(node.Scalar()) : Quote(node.Scalar());
    default:
      return "nothing";
  }
}

// Collects problems; every typed read reports its own failure and returns false.
class Reader {
 public:
  void Report(const Where& where, const std::string& message) {
    std::string line = where.line > 0 ? std::to_string(where.line) + ": " : " ";
    problems_.push_back(line + (where.path.empty() ? "top level" : where.path) + ": " + message);
  }
  const std::vector<std::string>& problems() const { return problems_; }
  // Something the file asked for that is met another way than it says (a newer Python
  // minor, a root directory to be made): said on stderr once the file loads.
  void Note(const Where& where, const std::string& message) {
    std::string line = where.line > 0 ? std::to_string(where.line) + ": " : " ";
    notes_.push_back(line + (where.path.empty() ? "top level" : where.path) + ": " + message);
  }
  const std::vector<std::string>& notes() const { return notes_; }

  bool Scalar(const YAML::Node& node, const Where& where, const char* expected) {
    if (node.IsScalar()) return true;
    Report(where, std::string("expected ") + expected + ", got " + Describe(node));
    return false;
  }

  bool Bool(const YAML::Node& node, const Where& where, bool* out) {
    static const std::set<std::string> kTrue = {"true", "True", "TRUE"};
    static const std::set<std::string> kFalse = {"false", "False", "FALSE"};
    const bool plain = node.IsScalar() && !IsQuoted(node);
    if (plain && (kTrue.count(node.Scalar()) || kFalse.count(node.Scalar()))) {
      *out = kTrue.count(node.Scalar()) > 0;
      return true;
    }
    Report(where, "expected true or false, got " + Describe(node));
    return false;
  }

  bool String(const YAML::Node& node, const Where& where, std::string* out) {
    if (!Scalar(node, where, "a string")) return false;
    *out = node.Scalar();
    return true;
  }

  // A list of strings; each bad item is reported at its own index. *out is replaced only
  // if every item is good.
  bool StringList(const YAML::Node& node, const Where& where, std::vector<std::string>* out) {
    if (!node.IsSequence()) {
      Report(where, "expected a list of strings, got " + Describe(node));
      return false;
    }
    std::vector<std::string> items;
    bool ok = true;
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Mark mark = node[i].Mark();
      const Where at{where.path + "[" + std::to_string(i) + "]",
                     mark.line >= 0 ? mark.line + 1 : where.line};
      std::string item;
      ok = String(node[i], at, &item) && ok;
      items.push_back(std::move(item));
    }
    if (ok) *out = std::move(items);
    return ok;
  }

  bool Int(const YAML::Node& node, const Where& where, int64_t min, int64_t max, int64_t* out) {
    const std::string s = node.IsScalar() && !IsQuoted(node) ? node.Scalar() : "";
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || end != s.data() + s.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      Report(where, "expected an integer, got " + Describe(node));
      return false;
    }
    if (ec == std::errc::result_out_of_range || v > max) {
      Report(where, "must be at most " + std::to_string(max) + " (got " + s + ")");
      return false;
    }
    if (v < min) {
      Report(where, "must be at least " + std::to_string(min) + " (got " + s + ")");
      return false;
    }
    *out = v;
    return true;
  }

  // A finite number >= min (> min when `exclusive`).
  bool Number(const YAML::Node& node, const Where& where, double min, bool exclusive, double* out) {
    const std::string s = node.IsScalar() && !IsQuoted(node) ? node.Scalar() : "";
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
      Report(where, "expected a number, got " + Describe(node));
      return false;
    }
    if (exclusive ? v <= min : v < min) {
      Report(where, std::string("must be ") + (exclusive ? "greater than " : "at least ") +
                        std::to_string(static_cast<int64_t>(min)) + " (got " + s + ")");
      return false;
    }
    *out = v;
    return true;
  }

  // A byte size > 0: an integer or a string such as "512m".
  bool Size(const YAML::Node& node, const Where& where, int64_t* out) {
    if (!Scalar(node, where, "a size like 512m")) return false;
    Result<int64_t> size = ParseSize(node.Scalar());
    if (!size) {
      Report(where, size.error().message());
      return false;
    }
    if (*size == 0) {
      Report(where, "must be greater than 0 (got " + node.Scalar() + ")");
      return false;
    }
    *out = *size;
    return true;
  }

 private:
  std::vector<std::string> problems_;
  std::vector<std::string> notes_;
};

// One key of a mapping and what to do with its value. `children` are the key-path
// suffixes below it (".memory", "[].host_path", ".*"), for ConfigKeyPaths().
template <typename T>
struct Rule {
  using Apply = std::function<void(const YAML::Node&, const Where&, Reader&, T&)>;
  Rule(std::string key, Apply apply, std::vector<std::string> children = {}, bool required = false)
      : key(std::move(key)),
        apply(std::move(apply)),
        children(std::move(children)),
        required(required) {}

  std::string key;
  Apply apply;
  std::vector<std::string> children;
  bool required;
};
template <typename T>
using Table = std::vector<Rule<T>>;

template <typename T>
std::string UnknownKeyMessage(const Table<T>& table, const std::string& key) {
  std::string known;
  std::string suggestion;
  for (const Rule<T>& rule : table) {
    known += (known.empty() ? "" : ", ") + rule.key;
    if (suggestion.empty() && EditDistance(key, rule.key) <= 2) suggestion = rule.key;
  }
  std::string message = "unknown key";
  if (!suggestion.empty()) message += " (did you mean " + suggestion + "?)";
  return message + "; known keys: " + known;
}

template <typename T>
void ApplyTable(const Table<T>& table, const YAML::Node& node, const Where& where, Reader& r,
                T& target) {
  if (node.IsNull()) return;  // an empty section sets nothing
  if (!node.IsMap()) {
    r.Report(where, "expected a mapping, got " + Describe(node));
    return;
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      r.Report(where, "keys must be plain names, got " + Describe(entry.first));
      continue;
    }
    const std::string& key = entry.first.Scalar();
    const Where at = Child(where, key, entry.first);
    if (!seen.insert(key).second) {
      r.Report(at, "duplicate key");
      continue;
    }
    auto rule = std::find_if(table.begin(), table.end(),
                             [&](const Rule<T>& candidate) { return candidate.key == key; });
    if (rule == table.end()) {
      r.Report(at, UnknownKeyMessage(table, key));
      continue;
    }
    rule->apply(entry.second, at, r, target);
  }
  for (const Rule<T>& rule : table) {
    if (rule.required && !seen.count(rule.key)) r.Report(where, "missing " + rule.key);
  }
}

template <typename T>
std::vector<std::string> KeyPaths(const Table<T>& table, const std::string& prefix = "") {
  std::vector<std::string> paths;
  for (const Rule<T>& rule : table) {
    if (rule.children.empty()) paths.push_back(prefix + rule.key);
    for (const std::string& child : rule.children) paths.push_back(prefix + rule.key + child);
  }
  return paths;
}

// ---- Rule builders, one per kind of value. ----

template <typename T>
Rule<T> BoolKey(const char* key, bool T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            bool v;
            if (r.Bool(n, w, &v)) t.*field = v;
          }};
}

template <typename T>
Rule<T> StringKey(const char* key, std::string T::*field, bool required = false) {
  return {key,
          [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            std::string v;
            if (r.String(n, w, &v)) t.*field = v;
          },
          {},
          required};
}

// A string that `null` unsets.
// A mode (runtime/spec/modes.h), parsed here so that a bad value is reported at its line,
// in the words Validate() used for it before the modes were typed.
template <typename E, typename T>
Rule<T> ModeKey(const char* key, E T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            std::string v;
            if (!r.String(n, w, &v)) return;
            if (std::optional<E> mode = ParseMode<E>(v)) {
              t.*field = *mode;
            } else {
              r.Report(w, BadModeText<E>(v));
            }
          }};
}

template <typename T>
Rule<T> OptionalStringKey(const char* key, std::optional<std::string> T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            std::string v;
            if (n.IsNull()) {
              t.*field = std::nullopt;
            } else if (r.String(n, w, &v)) {
              t.*field = v;
            }
          }};
}

template <typename T>
Rule<T> IntKey(const char* key, int64_t T::*field, int64_t min) {
  return {key, [field, min](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            int64_t v;
            if (r.Int(n, w, min, std::numeric_limits<int64_t>::max(), &v)) t.*field = v;
          }};
}

template <typename T>
Rule<T> OptionalIntKey(const char* key, std::optional<int64_t> T::*field, int64_t min) {
  return {key, [field, min](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            int64_t v;
            if (n.IsNull()) {
              t.*field = std::nullopt;
            } else if (r.Int(n, w, min, std::numeric_limits<int64_t>::max(), &v)) {
              t.*field = v;
            }
          }};
}

template <typename T>
Rule<T> IdKey(const char* key, uint32_t T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            int64_t v;
            if (r.Int(n, w, 0, kMaxId, &v)) t.*field = static_cast<uint32_t>(v);
          }};
}

template <typename T>
Rule<T> NumberKey(const char* key, double T::*field, double min, bool exclusive) {
  return {key, [field, min, exclusive](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            double v;
            if (r.Number(n, w, min, exclusive, &v)) t.*field = v;
          }};
}

template <typename T>
Rule<T> SizeKey(const char* key, int64_t T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            int64_t v;
            if (r.Size(n, w, &v)) t.*field = v;
          }};
}

// A size that `null` unsets.
template <typename T>
Rule<T> OptionalSizeKey(const char* key, std::optional<int64_t> T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            int64_t v;
            if (n.IsNull()) {
              t.*field = std::nullopt;
            } else if (r.Size(n, w, &v)) {
              t.*field = v;
            }
          }};
}

// A list of strings; replaces the member. An empty value sets nothing, as for ListKey.
template <typename T>
Rule<T> StringListKey(const char* key, std::vector<std::string> T::*field) {
  return {key, [field](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            if (!n.IsNull()) r.StringList(n, w, &(t.*field));
          }};
}

template <typename T>
std::vector<std::string> Suffixed(const Table<T>& table, const std::string& separator) {
  std::vector<std::string> out;
  for (const std::string& path : KeyPaths(table)) out.push_back(separator + path);
  return out;
}

// A nested mapping whose keys fill the member `member` of T.
template <typename T, typename S>
Rule<T> SectionKey(const char* key, S T::*member, const Table<S>& table) {
  return {key,
          [member, &table](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            ApplyTable(table, n, w, r, t.*member);
          },
          Suffixed(table, ".")};
}

// A nested mapping whose keys fill fields of T itself (`user: {uid, gid}`).
template <typename T>
Rule<T> SectionKey(const char* key, const Table<T>& table) {
  return {key,
          [&table](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            ApplyTable(table, n, w, r, t);
          },
          Suffixed(table, ".")};
}

// A list of mappings, each parsed into a default-constructed E; replaces the member.
template <typename T, typename E>
Rule<T> ListKey(const char* key, std::vector<E> T::*member, const Table<E>& table) {
  return {
      key,
      [member, &table](const YAML::Node& n, const Where& w, Reader& r, T& t) {
        if (n.IsNull()) return;
        if (!n.IsSequence()) {
          r.Report(w, "expected a list, got " + Describe(n));
          return;
        }
        std::vector<E> items;
        for (size_t i = 0; i < n.size(); ++i) {
          const YAML::Mark mark = n[i].Mark();
          Where at{w.path + "[" + std::to_string(i) + "]", mark.line >= 0 ? mark.line + 1 : w.line};
          E item{};
          ApplyTable(table, n[i], at, r, item);
          items.push_back(std::move(item));
        }
        t.*member = std::move(items);
      },
      Suffixed(table, "[].")};
}

using NamedStrings = std::vector<std::pair<std::string, std::string>>;
// Reads one mapping value into one or more strings (false: it reported why not).
using ValueStrings =
    std::function<bool(const YAML::Node&, const Where&, Reader&, std::vector<std::string>*)>;

// A mapping of NAME: value into (name, string) pairs, in order; a duplicate name is
// reported, and a value may give several strings (one pair each). Not a mapping: reported
// ("expected a mapping of NAME: <what>"), nullopt.
inline std::optional<NamedStrings> ReadNamedStrings(const YAML::Node& n, const Where& w, Reader& r,
                                                    const char* what,
                                                    const ValueStrings& read_value) {
  if (!n.IsMap()) {
    r.Report(w, std::string("expected a mapping of NAME: ") + what + ", got " + Describe(n));
    return std::nullopt;
  }
  NamedStrings entries;
  std::set<std::string> seen;
  for (const auto& entry : n) {
    std::string name;
    if (!r.String(entry.first, w, &name)) continue;
    const Where at = Child(w, name, entry.first);
    std::vector<std::string> values;
    if (!seen.insert(name).second) {
      r.Report(at, "duplicate key");
    } else if (read_value(entry.second, at, r, &values)) {
      for (std::string& v : values) entries.emplace_back(name, std::move(v));
    }
  }
  return entries;
}

// A mapping of NAME: value strings; replaces the member.
template <typename T>
Rule<T> StringMapKey(const char* key, NamedStrings T::*member) {
  return {key,
          [member](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            if (n.IsNull()) return;
            auto entries = ReadNamedStrings(n, w, r, "value",
                                            [](const YAML::Node& v, const Where& at, Reader& rd,
                                               std::vector<std::string>* out) {
                                              out->resize(1);
                                              return rd.String(v, at, &(*out)[0]);
                                            });
            if (entries) t.*member = std::move(*entries);
          },
          {".*"}};
}

}  // namespace corral::runtime::config_schema
