#include "runtime/spec/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "base/files.h"
#include "runtime/spec/sizes.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/server_config.h"
#include "runtime/spec/utf8_text.h"
#include "runtime/spec/yaml_documents.h"

namespace corral::runtime {
namespace {

constexpr uint32_t kMaxId = std::numeric_limits<uint32_t>::max() - 1;  // -1 means "unchanged"

// Where a value sits: its key path and the 1-based line of its key (0 = unknown).
struct Where {
  std::string path;
  int line = 0;
};

Where Child(const Where& parent, const std::string& key, const YAML::Node& key_node) {
  const YAML::Mark mark = key_node.Mark();
  return {parent.path.empty() ? key : parent.path + "." + key, mark.line >= 0 ? mark.line + 1 : 0};
}

std::string Quote(const std::string& s) {
  constexpr size_t kMax = 60;
  return "\"" + (s.size() > kMax ? s.substr(0, kMax) + "..." : s) + "\"";
}

// yaml-cpp tags plain scalars "?"; quoted ones "!" (or !!str when explicit).
bool IsQuoted(const YAML::Node& node) {
  return node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str";
}

std::string Describe(const YAML::Node& node) {
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

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

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

// A mapping of NAME: value strings; replaces the member.
template <typename T>
Rule<T> StringMapKey(const char* key, std::vector<std::pair<std::string, std::string>> T::*member) {
  return {key,
          [member](const YAML::Node& n, const Where& w, Reader& r, T& t) {
            if (n.IsNull()) return;
            if (!n.IsMap()) {
              r.Report(w, "expected a mapping of NAME: value, got " + Describe(n));
              return;
            }
            std::vector<std::pair<std::string, std::string>> entries;
            std::set<std::string> seen;
            for (const auto& entry : n) {
              std::string name;
              if (!r.String(entry.first, w, &name)) continue;
              const Where at = Child(w, name, entry.first);
              std::string value;
              if (!seen.insert(name).second) {
                r.Report(at, "duplicate key");
              } else if (r.String(entry.second, at, &value)) {
                entries.emplace_back(name, value);
              }
            }
            t.*member = std::move(entries);
          },
          {".*"}};
}

// ---- The schema. New top-level sections (e.g. DeerFlow's `sandbox:`) go in TopLevel. ----

const Table<MountSpec>& MountTable() {
  static const Table<MountSpec> table = {
      StringKey("host_path", &MountSpec::host_path, /*required=*/true),
      StringKey("container_path", &MountSpec::container_path, /*required=*/true),
      BoolKey("read_only", &MountSpec::read_only),
  };
  return table;
}

const Table<JailSpec>& UserTable() {
  static const Table<JailSpec> table = {IdKey("uid", &JailSpec::uid), IdKey("gid", &JailSpec::gid)};
  return table;
}

const Table<NamespaceSpec>& NamespaceTable() {
  static const Table<NamespaceSpec> table = {
      BoolKey("pid", &NamespaceSpec::pid),       BoolKey("uts", &NamespaceSpec::uts),
      BoolKey("ipc", &NamespaceSpec::ipc),       BoolKey("net", &NamespaceSpec::net),
      BoolKey("cgroup", &NamespaceSpec::cgroup),
  };
  return table;
}

const Table<JailSpec>& SeccompTable() {
  static const Table<JailSpec> table = {StringKey("profile", &JailSpec::seccomp_profile)};
  return table;
}

const Table<LimitsSpec>& LimitsTable() {
  static const Table<LimitsSpec> table = {
      SizeKey("memory", &LimitsSpec::memory_bytes),
      NumberKey("cpus", &LimitsSpec::cpus, 0, /*exclusive=*/true),
      IntKey("pids", &LimitsSpec::pids, 1),
      NumberKey("timeout", &LimitsSpec::timeout_seconds, 0, /*exclusive=*/false),
      OptionalIntKey("cpu_time", &LimitsSpec::cpu_time_seconds, 1),
      SizeKey("output", &LimitsSpec::output_limit_bytes),
      SizeKey("tmp_size", &LimitsSpec::tmp_size_bytes),
      SizeKey("file_size", &LimitsSpec::file_size_bytes),
      IntKey("open_files", &LimitsSpec::open_files, 1),
      NumberKey("kill_grace", &LimitsSpec::kill_grace_seconds, 0, /*exclusive=*/false),
  };
  return table;
}

const Table<CgroupSpec>& CgroupTable() {
  static const Table<CgroupSpec> table = {StringKey("driver", &CgroupSpec::driver),
                                          StringKey("parent", &CgroupSpec::parent)};
  return table;
}

const Table<UnsafeSpec>& UnsafeTable() {
  static const Table<UnsafeSpec> table = {
      BoolKey("allow_root", &UnsafeSpec::allow_root),
      BoolKey("allow_missing_limits", &UnsafeSpec::allow_missing_limits),
      BoolKey("allow_unconfined_seccomp", &UnsafeSpec::allow_unconfined_seccomp),
      BoolKey("host_network", &UnsafeSpec::host_network),
      // `corral serve` without an API key; checked here, read by LoadServerConfigFile.
      {"no_auth", [](const YAML::Node& n, const Where& w, Reader& r, UnsafeSpec&) {
         bool v;
         (void)r.Bool(n, w, &v);
       }},
  };
  return table;
}

// DeerFlow's `sandbox:` and `skills:` sections configure the tool layer
// (runtime/spec/provider_config.h, read by `corral tool`). A jail accepts them so that one file
// configures both, and still checks them, so a typo there is not silently ignored.
Rule<JailSpec> ProviderSectionKey(const char* key) {
  return {key, [section = std::string(key)](const YAML::Node& n, const Where& w, Reader& r,
                                            JailSpec&) {
            ProviderConfig scratch;
            Status st = section == "sandbox" ? LoadProviderConfig(n, YAML::Node(), &scratch)
                                             : LoadProviderConfig(YAML::Node(), n, &scratch);
            if (!st) r.Report(w, st.error().message());
          }};
}

// `server:` configures `corral serve` (runtime/spec/server_config.h); checked here too.
Rule<JailSpec> ServerSectionKey() {
  return {"server", [](const YAML::Node& n, const Where& w, Reader& r, JailSpec&) {
            ServerConfig scratch;
            if (Status st = LoadServerConfig(n, &scratch); !st) r.Report(w, st.error().message());
          }};
}

const Table<JailSpec>& TopLevel() {
  static const Table<JailSpec> table = {
      OptionalStringKey("rootfs", &JailSpec::rootfs),
      StringKey("hostname", &JailSpec::hostname),
      SectionKey("user", UserTable()),
      OptionalStringKey("workdir", &JailSpec::workdir),
      StringMapKey("env", &JailSpec::env),
      SectionKey("namespaces", &JailSpec::namespaces, NamespaceTable()),
      OptionalStringKey("skills_dir", &JailSpec::skills_dir),
      OptionalStringKey("user_data_dir", &JailSpec::user_data_dir),
      OptionalStringKey("acp_workspace_dir", &JailSpec::acp_workspace_dir),
      ListKey("mounts", &JailSpec::mounts, MountTable()),
      SectionKey("seccomp", SeccompTable()),
      SectionKey("limits", &JailSpec::limits, LimitsTable()),
      SectionKey("cgroups", &JailSpec::cgroups, CgroupTable()),
      SectionKey("unsafe", &JailSpec::unsafe, UnsafeTable()),
      ProviderSectionKey("sandbox"),
      ProviderSectionKey("skills"),
      ServerSectionKey(),
  };
  return table;
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

Result<uint32_t> ParseId(const std::string& text, const std::string& flag) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > kMaxId) {
    return Error(ErrorCode::kInvalidArgument,
                 "user " + Quote(flag) + ": expected UID[:GID] with decimal ids below " +
                     std::to_string(kMaxId + 1ull) + ", got " + Quote(text));
  }
  return static_cast<uint32_t>(v);
}

}  // namespace

Status LoadConfigText(const std::string& yaml, const std::string& origin, JailSpec* spec) {
  RETURN_IF_ERROR(CheckUtf8Text(yaml, origin));
  std::vector<YAML::Node> documents;
  try {
    // Counted first: YAML::LoadAll never returns on some invalid texts (yaml_documents.h).
    size_t count = CountYamlDocuments(yaml);
    if (count > 1) {
      return Error(ErrorCode::kInvalidArgument,
                   origin + ": expected one YAML document, found " + std::to_string(count));
    }
    if (count == 1) documents.push_back(YAML::Load(yaml));
  } catch (const YAML::Exception& e) {
    return Error(ErrorCode::kInvalidArgument, origin + ":" + std::to_string(e.mark.line + 1) + ":" +
                                                  std::to_string(e.mark.column + 1) +
                                                  ": invalid YAML: " + e.msg);
  }
  Reader reader;
  try {
    if (!documents.empty()) ApplyTable(TopLevel(), documents[0], Where{}, reader, *spec);
  } catch (const YAML::Exception& e) {
    // The readers check node types before converting, so this is a bug, not bad input.
    return Error(ErrorCode::kInternal, origin + ": reading config: " + e.what());
  }
  if (reader.problems().empty()) return Ok();
  std::string message;
  for (const std::string& problem : reader.problems()) {
    message += (message.empty() ? "" : "\n") + origin + ":" + problem;
  }
  return Error(ErrorCode::kInvalidArgument, message);
}

Status LoadConfigFile(const std::string& path, JailSpec* spec) {
  Result<std::string> text = ReadFile(path);
  if (!text) return text.error().WithContext("reading config");
  return LoadConfigText(*text, path, spec);
}

std::vector<std::string> ConfigKeyPaths() { return KeyPaths(TopLevel()); }

Result<MountSpec> ParseMountFlag(const std::string& flag) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = flag.find(':', start)) != std::string::npos; start = colon + 1) {
    parts.push_back(flag.substr(start, colon - start));
  }
  parts.push_back(flag.substr(start));
  const bool mode_ok =
      parts.size() == 2 || (parts.size() == 3 && (parts[2] == "ro" || parts[2] == "rw"));
  if (!mode_ok || parts[0].empty() || parts[1].empty()) {
    return Error(
        ErrorCode::kInvalidArgument,
        "mount " + Quote(flag) + ": expected HOST:CONTAINER[:ro|rw], e.g. /srv/data:/data:ro");
  }
  return MountSpec{parts[0], parts[1], parts.size() == 2 || parts[2] == "ro"};
}

Result<std::pair<std::string, std::string>> ParseEnvFlag(const std::string& flag) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos) {
    return Error(ErrorCode::kInvalidArgument,
                 "env " + Quote(flag) + ": expected NAME=VALUE (VALUE may be empty)");
  }
  std::string name = flag.substr(0, eq);
  if (!IsEnvName(name)) {
    return Error(
        ErrorCode::kInvalidArgument,
        "env " + Quote(flag) + ": NAME must match [A-Za-z_][A-Za-z0-9_]*, got " + Quote(name));
  }
  return std::make_pair(std::move(name), flag.substr(eq + 1));
}

Result<std::pair<uint32_t, uint32_t>> ParseUserFlag(const std::string& flag) {
  const size_t colon = flag.find(':');
  ASSIGN_OR_RETURN(uint32_t uid, ParseId(flag.substr(0, colon), flag));
  uint32_t gid = uid;
  if (colon != std::string::npos) {
    ASSIGN_OR_RETURN(gid, ParseId(flag.substr(colon + 1), flag));
  }
  return std::make_pair(uid, gid);
}

}  // namespace corral::runtime
