#include "jail/seccomp_profile_parse.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>

namespace corral::jail {
namespace {

using nlohmann::json;

std::string Field(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string Elem(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

Error Bad(const std::string& path, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, path.empty() ? message : path + ": " + message);
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// nlohmann keeps the last of two equal keys; a reviewer reads the first. Refusing
// duplicates keeps what the file says and what we enforce the same.
class DuplicateKeyCheck {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames_.push_back({event == json::parse_event_t::object_start, ChildPath(), {}, {}, 0});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        break;
      case json::parse_event_t::key:
        frames_.back().key = parsed.get<std::string>();
        if (!frames_.back().keys.insert(frames_.back().key).second && !error_) {
          error_ = Field(frames_.back().path, frames_.back().key) + ": duplicate key";
        }
        break;
      case json::parse_event_t::value:
        ChildPath();
        break;
    }
    return true;
  }
  const std::optional<std::string>& error() const { return error_; }

 private:
  struct Frame {
    bool is_object;
    std::string path;
    std::string key;
    std::set<std::string> keys;
    size_t next_index;
  };
  // The path of the value that starts now (advances the index of an enclosing array).
  std::string ChildPath() {
    if (frames_.empty()) return "";
    Frame& top = frames_.back();
    return top.is_object ? Field(top.path, top.key) : Elem(top.path, top.next_index++);
  }

  std::vector<Frame> frames_;
  std::optional<std::string> error_;
};

Result<json> ParseJson(const std::string& text) {
  DuplicateKeyCheck check;
  json j;
  try {
    j = json::parse(text, std::ref(check));
  } catch (const json::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 3, column 7: ...".
    // Not only parse_error: a number too large for a double is out_of_range.406 (found by
    // tests/fuzz/fuzz_seccomp_profile; it ended corral in std::terminate).
    std::string what = e.what();
    size_t start = what.find("] ");
    return Bad("", "invalid JSON: " + what.substr(start == std::string::npos ? 0 : start + 2));
  }
  if (check.error()) return Bad("", *check.error());
  return j;
}

const char* TypeName(const json& j) { return j.type_name(); }

Status CheckObject(const json& j, const std::string& path,
                   std::initializer_list<const char*> allowed) {
  if (!j.is_object()) return Bad(path, std::string("expected an object, got ") + TypeName(j));
  for (const auto& item : j.items()) {
    // A named reference, not a structured binding: clang 14 cannot capture those.
    const std::string& key = item.key();
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
      return Bad(Field(path, key), "unknown key");
    }
  }
  return Ok();
}

Result<std::string> GetString(const json& j, const std::string& path) {
  if (!j.is_string()) return Bad(path, std::string("expected a string, got ") + TypeName(j));
  return j.get<std::string>();
}

Result<std::vector<std::string>> GetStrings(const json& j, const std::string& path) {
  if (!j.is_array()) {
    return Bad(path, std::string("expected an array of strings, got ") + TypeName(j));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s, GetString(j[i], Elem(path, i)));
    if (s.empty()) return Bad(Elem(path, i), "empty string");
    out.push_back(std::move(s));
  }
  return out;
}

Result<uint64_t> GetUnsigned(const json& j, const std::string& path, uint64_t max) {
  if (!j.is_number_unsigned()) {
    return Bad(path, std::string("expected a non-negative integer, got ") +
                         (j.is_number() ? j.dump() : TypeName(j)));
  }
  uint64_t v = j.get<uint64_t>();
  if (v > max)
    return Bad(path, std::to_string(v) + " is out of range (max " + std::to_string(max) + ")");
  return v;
}

// The kernel clamps SECCOMP_RET_ERRNO data to MAX_ERRNO; the TRACE message is 16 bits.
constexpr uint64_t kMaxErrno = 4095;
constexpr uint64_t kMaxTraceData = 0xffff;

// Reads `action_key` (required) and `errno_key` (optional) of `obj`.
Result<uint32_t> ParseAction(const json& obj, const std::string& path, const char* action_key,
                             const char* errno_key) {
  if (!obj.contains(action_key)) return Bad(path, std::string("missing \"") + action_key + "\"");
  const std::string action_path = Field(path, action_key);
  const std::string errno_path = Field(path, errno_key);
  ASSIGN_OR_RETURN(std::string name, GetString(obj.at(action_key), action_path));
  const bool has_errno = obj.contains(errno_key);
  if (name == "SCMP_ACT_ERRNO" || name == "SCMP_ACT_TRACE") {
    const bool is_errno = name == "SCMP_ACT_ERRNO";
    uint64_t data = EPERM;  // runc's default for both when errnoRet is absent
    if (has_errno) {
      ASSIGN_OR_RETURN(
          data, GetUnsigned(obj.at(errno_key), errno_path, is_errno ? kMaxErrno : kMaxTraceData));
    }
    return is_errno ? SCMP_ACT_ERRNO(data) : SCMP_ACT_TRACE(data);
  }
  static const std::pair<const char*, uint32_t> kPlain[] = {
      {"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW},
      {"SCMP_ACT_KILL", SCMP_ACT_KILL},
      {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD},
      {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS},
      {"SCMP_ACT_TRAP", SCMP_ACT_TRAP},
      {"SCMP_ACT_LOG", SCMP_ACT_LOG},
  };
  for (const auto& [known, value] : kPlain) {
    if (name != known) continue;
    if (has_errno) return Bad(errno_path, "only valid with SCMP_ACT_ERRNO or SCMP_ACT_TRACE");
    return value;
  }
  if (name == "SCMP_ACT_NOTIFY") {
    return Bad(action_path, "unsupported action \"SCMP_ACT_NOTIFY\" (no notify listener)");
  }
  return Bad(action_path, "unknown action " + Quote(name));
}

Result<scmp_compare> ParseOp(const json& j, const std::string& path) {
  ASSIGN_OR_RETURN(std::string name, GetString(j, path));
  static const std::pair<const char*, scmp_compare> kOps[] = {
      {"SCMP_CMP_NE", SCMP_CMP_NE},
      {"SCMP_CMP_LT", SCMP_CMP_LT},
      {"SCMP_CMP_LE", SCMP_CMP_LE},
      {"SCMP_CMP_EQ", SCMP_CMP_EQ},
      {"SCMP_CMP_GE", SCMP_CMP_GE},
      {"SCMP_CMP_GT", SCMP_CMP_GT},
      {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
  };
  for (const auto& [known, op] : kOps) {
    if (name == known) return op;
  }
  return Bad(path, "unknown operator " + Quote(name));
}

Result<SeccompArgSpec> ParseArg(const json& j, const std::string& path) {
  RETURN_IF_ERROR(CheckObject(j, path, {"index", "value", "valueTwo", "op"}));
  for (const char* key : {"index", "value", "op"}) {
    if (!j.contains(key)) return Bad(path, std::string("missing \"") + key + "\"");
  }
  SeccompArgSpec arg;
  ASSIGN_OR_RETURN(uint64_t index, GetUnsigned(j.at("index"), Field(path, "index"), 5));
  arg.index = static_cast<unsigned>(index);
  ASSIGN_OR_RETURN(arg.op, ParseOp(j.at("op"), Field(path, "op")));
  ASSIGN_OR_RETURN(arg.value, GetUnsigned(j.at("value"), Field(path, "value"), UINT64_MAX));
  if (j.contains("valueTwo")) {
    const std::string two_path = Field(path, "valueTwo");
    ASSIGN_OR_RETURN(arg.value_two, GetUnsigned(j.at("valueTwo"), two_path, UINT64_MAX));
    // libseccomp ignores it for other operators; a non-zero one means a misread rule.
    if (arg.op != SCMP_CMP_MASKED_EQ && arg.value_two != 0) {
      return Bad(two_path, "only used with SCMP_CMP_MASKED_EQ");
    }
  }
  return arg;
}

Result<std::vector<SeccompArgSpec>> ParseArgs(const json& j, const std::string& path) {
  if (!j.is_array()) return Bad(path, std::string("expected an array, got ") + TypeName(j));
  std::vector<SeccompArgSpec> args;
  for (size_t i = 0; i < j.size(); ++i) {
    ASSIGN_OR_RETURN(SeccompArgSpec arg, ParseArg(j[i], Elem(path, i)));
    // libseccomp takes one comparison per argument in a rule. runc would quietly turn
    // such a rule into an OR of its conditions, which widens an AND-meant range.
    for (const SeccompArgSpec& earlier : args) {
      if (earlier.index == arg.index) {
        return Bad(Field(Elem(path, i), "index"),
                   "argument " + std::to_string(arg.index) +
                       " is already compared in this rule; put alternatives in separate "
                       "syscalls[] entries");
      }
    }
    args.push_back(arg);
  }
  return args;
}

bool IsKnownGoArch(const std::string& name) {
  static const char* const kGoArches[] = {
      "386",      "amd64", "arm",   "arm64",   "loong64", "mips", "mipsle", "mips64",
      "mips64le", "ppc",   "ppc64", "ppc64le", "riscv64", "s390", "s390x",  "x32",
  };
  return std::any_of(std::begin(kGoArches), std::end(kGoArches),
                     [&](const char* a) { return name == a; });
}

Result<SeccompRuleFilter> ParseFilter(const json& j, const std::string& path) {
  RETURN_IF_ERROR(CheckObject(j, path, {"arches", "caps", "minKernel"}));
  if (j.contains("caps")) {
    return Bad(Field(path, "caps"),
               "not supported: the profile is compiled without knowing the jail's "
               "capabilities (corral drops them all)");
  }
  SeccompRuleFilter filter;
  if (j.contains("arches")) {
    ASSIGN_OR_RETURN(filter.arches, GetStrings(j.at("arches"), Field(path, "arches")));
    for (size_t i = 0; i < filter.arches.size(); ++i) {
      if (!IsKnownGoArch(filter.arches[i])) {
        return Bad(Elem(Field(path, "arches"), i),
                   "unknown architecture " + Quote(filter.arches[i]) + " (Go names: amd64, ...)");
      }
    }
  }
  if (j.contains("minKernel")) {
    const std::string mk_path = Field(path, "minKernel");
    ASSIGN_OR_RETURN(std::string text, GetString(j.at("minKernel"), mk_path));
    filter.min_kernel = ParseKernelVersion(text);
    if (!filter.min_kernel || text.find_first_not_of("0123456789.") != std::string::npos) {
      return Bad(mk_path, "expected \"major.minor\", got " + Quote(text));
    }
  }
  return filter;
}

Result<std::vector<std::string>> ParseNames(const json& j, const std::string& path) {
  const bool has_names = j.contains("names");
  const bool has_name = j.contains("name");
  if (has_names && has_name) return Bad(Field(path, "name"), "give either names or name");
  if (has_name) {
    ASSIGN_OR_RETURN(std::string name, GetString(j.at("name"), Field(path, "name")));
    if (name.empty()) return Bad(Field(path, "name"), "empty string");
    return std::vector<std::string>{name};
  }
  if (!has_names) return Bad(path, "missing \"names\"");
  ASSIGN_OR_RETURN(auto names, GetStrings(j.at("names"), Field(path, "names")));
  if (names.empty()) return Bad(Field(path, "names"), "empty list");
  return names;
}

Result<SeccompRuleSpec> ParseRule(const json& j, const std::string& path) {
  RETURN_IF_ERROR(CheckObject(
      j, path, {"names", "name", "action", "errnoRet", "args", "comment", "includes", "excludes"}));
  SeccompRuleSpec rule;
  rule.path = path;
  ASSIGN_OR_RETURN(rule.names, ParseNames(j, path));
  ASSIGN_OR_RETURN(rule.action, ParseAction(j, path, "action", "errnoRet"));
  if (j.contains("args") && !j.at("args").is_null()) {
    ASSIGN_OR_RETURN(rule.args, ParseArgs(j.at("args"), Field(path, "args")));
  }
  if (j.contains("comment")) RETURN_IF_ERROR(GetString(j.at("comment"), Field(path, "comment")));
  if (j.contains("includes")) {
    ASSIGN_OR_RETURN(rule.includes, ParseFilter(j.at("includes"), Field(path, "includes")));
  }
  if (j.contains("excludes")) {
    ASSIGN_OR_RETURN(rule.excludes, ParseFilter(j.at("excludes"), Field(path, "excludes")));
  }
  return rule;
}

// libseccomp's names are SCMP_ARCH_ + the upper-cased arch name ("x86_64", "aarch64").
std::string NativeArchName() {
  static const char* const kArches[] = {
      "x86",       "x86_64", "x32",      "arm",         "aarch64", "mips",  "mips64",
      "mips64n32", "mipsel", "mipsel64", "mipsel64n32", "ppc",     "ppc64", "ppc64le",
      "s390",      "s390x",  "parisc",   "parisc64",    "riscv64",
  };
  for (const char* arch : kArches) {
    if (seccomp_arch_resolve_name(arch) == seccomp_arch_native()) {
      std::string name = std::string("SCMP_ARCH_") + arch;
      std::transform(name.begin(), name.end(), name.begin(), ::toupper);
      return name;
    }
  }
  return "SCMP_ARCH_UNKNOWN";
}

// The filter is for the native ABI only; other listed architectures are ignored (their
// calls hit the bad-architecture action), but the native one must be asked for.
Status CheckArchitectures(const json& j, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<std::string> arches, GetStrings(j, path));
  for (size_t i = 0; i < arches.size(); ++i) {
    if (arches[i].rfind("SCMP_ARCH_", 0) != 0) {
      return Bad(Elem(path, i), "expected an SCMP_ARCH_* name, got " + Quote(arches[i]));
    }
  }
  const std::string native = NativeArchName();
  if (!arches.empty() && std::find(arches.begin(), arches.end(), native) == arches.end()) {
    return Bad(path, "does not include the native architecture " + native);
  }
  return Ok();
}

// Docker's name (Go GOARCH) for the architecture this binary runs on, e.g. "amd64".
const char* NativeGoArch() {
  static const std::pair<uint32_t, const char*> kGoNames[] = {
      {SCMP_ARCH_X86_64, "amd64"},      {SCMP_ARCH_X86, "386"},
      {SCMP_ARCH_AARCH64, "arm64"},     {SCMP_ARCH_ARM, "arm"},
      {SCMP_ARCH_PPC64LE, "ppc64le"},   {SCMP_ARCH_PPC64, "ppc64"},
      {SCMP_ARCH_S390X, "s390x"},       {SCMP_ARCH_S390, "s390"},
      {SCMP_ARCH_RISCV64, "riscv64"},   {SCMP_ARCH_MIPS, "mips"},
      {SCMP_ARCH_MIPSEL, "mipsle"},     {SCMP_ARCH_MIPS64, "mips64"},
      {SCMP_ARCH_MIPSEL64, "mips64le"},
  };
  for (const auto& [token, name] : kGoNames) {
    if (token == seccomp_arch_native()) return name;
  }
  return "unknown";
}

}  // namespace

Result<SeccompProfileSpec> ParseSeccompProfile(const std::string& json_text) {
  ASSIGN_OR_RETURN(json root, ParseJson(json_text));
  RETURN_IF_ERROR(CheckObject(
      root, "", {"defaultAction", "defaultErrnoRet", "architectures", "syscalls", "comment"}));
  SeccompProfileSpec spec;
  ASSIGN_OR_RETURN(spec.default_action, ParseAction(root, "", "defaultAction", "defaultErrnoRet"));
  if (root.contains("architectures")) {
    RETURN_IF_ERROR(CheckArchitectures(root.at("architectures"), "architectures"));
  }
  if (root.contains("comment")) RETURN_IF_ERROR(GetString(root.at("comment"), "comment"));
  if (root.contains("syscalls") && !root.at("syscalls").is_null()) {
    const json& rules = root.at("syscalls");
    if (!rules.is_array()) {
      return Bad("syscalls", std::string("expected an array, got ") + TypeName(rules));
    }
    for (size_t i = 0; i < rules.size(); ++i) {
      ASSIGN_OR_RETURN(SeccompRuleSpec rule, ParseRule(rules[i], Elem("syscalls", i)));
      spec.rules.push_back(std::move(rule));
    }
  }
  return spec;
}

bool SeccompRuleApplies(const SeccompRuleSpec& rule, const KernelVersion& kernel) {
  const std::string arch = NativeGoArch();
  auto lists_arch = [&](const SeccompRuleFilter& f) {
    return std::find(f.arches.begin(), f.arches.end(), arch) != f.arches.end();
  };
  // Docker's order and meaning (an excluded minKernel drops the rule on newer kernels).
  if (lists_arch(rule.excludes)) return false;
  if (rule.excludes.min_kernel && kernel >= *rule.excludes.min_kernel) return false;
  if (!rule.includes.arches.empty() && !lists_arch(rule.includes)) return false;
  if (rule.includes.min_kernel && kernel < *rule.includes.min_kernel) return false;
  return true;
}

std::optional<KernelVersion> ParseKernelVersion(const std::string& text) {
  KernelVersion v;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto [after_major, ec1] = std::from_chars(p, end, v.major);
  if (ec1 != std::errc() || after_major == end || *after_major != '.') return std::nullopt;
  auto [after_minor, ec2] = std::from_chars(after_major + 1, end, v.minor);
  if (ec2 != std::errc()) return std::nullopt;
  if (after_minor != end && *after_minor != '.' && *after_minor != '-') return std::nullopt;
  return v;
}

}  // namespace corral::jail
