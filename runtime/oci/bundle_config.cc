#include "runtime/oci/bundle_config.h"

#include <sys/capability.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <utility>

#include "base/files.h"
#include "base/json_input.h"
#include "base/json_nul.h"

namespace corral::runtime::oci {
namespace {

using nlohmann::json;

// Helper names carry "Bundle": the library is compiled in unity batches with its siblings.

Error BundleError(const std::string& path, const std::string& reason) {
  return ConfigFieldError(path, reason);
}

std::string BundleKey(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string BundleIndex(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string BundleQuote(const std::string& s) { return "\"" + s + "\""; }

Error BundleTypeError(const json& j, const std::string& path, const char* expected) {
  return BundleError(path, std::string("expected ") + expected + ", got " + j.type_name());
}

// Go's encoding/json reads null as the field's zero value, and Go generators without
// omitempty write it (containerd's "args": null in seccomp rules): null is absent.
const json* BundleMember(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status BundleCheckKeys(const json& j, const std::string& path,
                       std::initializer_list<const char*> known) {
  if (!j.is_object()) return BundleTypeError(j, path, "an object");
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      return BundleError(BundleKey(path, key), "unknown key");
    }
  }
  return Ok();
}

template <typename T>
Result<T> BundleInteger(const json& j, const std::string& path) {
  if (!j.is_number_integer()) {
    return BundleError(path, std::string("expected an integer, got ") +
                                 (j.is_number() ? j.dump() : j.type_name()));
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<T>::max());
  constexpr auto kMin = static_cast<int64_t>(std::numeric_limits<T>::min());
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() <= kMax) return static_cast<T>(j.get<uint64_t>());
  } else {
    const int64_t x = j.get<int64_t>();
    if (x >= kMin && (x < 0 || static_cast<uint64_t>(x) <= kMax)) return static_cast<T>(x);
  }
  return BundleError(path, j.dump() + " is out of range (" + std::to_string(kMin) + ".." +
                               std::to_string(kMax) + ")");
}

template <typename T>
struct BundleIsVector : std::false_type {};
template <typename E>
struct BundleIsVector<std::vector<E>> : std::true_type {};

template <typename T>
Result<T> BundleValue(const json& j, const std::string& path) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) return BundleTypeError(j, path, "a boolean");
    return j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    return BundleInteger<T>(j, path);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) return BundleTypeError(j, path, "a string");
    return j.get<std::string>();
  } else if constexpr (BundleIsVector<T>::value) {
    if (!j.is_array()) return BundleTypeError(j, path, "an array");
    T out;
    for (size_t i = 0; i < j.size(); ++i) {
      ASSIGN_OR_RETURN(auto item, BundleValue<typename T::value_type>(j[i], BundleIndex(path, i)));
      out.push_back(std::move(item));
    }
    return out;
  } else {
    static_assert(std::is_same_v<T, std::map<std::string, std::string>>);
    if (!j.is_object()) return BundleTypeError(j, path, "an object");
    T out;
    for (const auto& item : j.items()) {
      ASSIGN_OR_RETURN(out[item.key()],
                       BundleValue<std::string>(item.value(), BundleKey(path, item.key())));
    }
    return out;
  }
}

template <typename T>
struct BundleInner {
  using type = T;
};
template <typename T>
struct BundleInner<std::optional<T>> {
  using type = T;
};

// Leaves *out as it is when `key` is absent or null.
template <typename T>
Status BundleOptional(const json& obj, const std::string& path, const char* key, T* out) {
  const json* v = BundleMember(obj, key);
  if (v == nullptr) return Ok();
  ASSIGN_OR_RETURN(*out, BundleValue<typename BundleInner<T>::type>(*v, BundleKey(path, key)));
  return Ok();
}

template <typename T>
Result<T> BundleRequired(const json& obj, const std::string& path, const char* key) {
  const json* v = BundleMember(obj, key);
  if (v == nullptr) return BundleError(BundleKey(path, key), "missing");
  return BundleValue<T>(*v, BundleKey(path, key));
}

// A list of objects, each read by `parse(element, element_path)`.
template <typename T, typename F>
Status BundleObjects(const json& obj, const std::string& path, const char* key, std::vector<T>* out,
                     F parse) {
  const json* v = BundleMember(obj, key);
  if (v == nullptr) return Ok();
  const std::string list_path = BundleKey(path, key);
  if (!v->is_array()) return BundleTypeError(*v, list_path, "an array");
  for (size_t i = 0; i < v->size(); ++i) {
    ASSIGN_OR_RETURN(T item, parse((*v)[i], BundleIndex(list_path, i)));
    out->push_back(std::move(item));
  }
  return Ok();
}

Status BundleAbsolute(const std::string& value, const std::string& path) {
  if (value.empty() || value[0] != '/') {
    return BundleError(path, "expected an absolute path, got " + BundleQuote(value));
  }
  return Ok();
}

std::string BundleNormalPath(const std::string& p) {
  std::string out = std::filesystem::path(p).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

enum class BundleKind { kBoolean, kNumber, kString, kArray, kObject };

constexpr const char* kBundleUnsupported = "not supported by corral-runc";

// Spec fields corral-runc does not implement, all of `kind`: each is accepted only with its
// "nothing to do" value, so that a config never asks for more than the container gets.
// `zero_is_noop` is false where 0 is a setting (memory.swappiness).
Status BundleRefuseSet(const json& obj, const std::string& path, BundleKind kind,
                       std::initializer_list<const char*> keys, bool zero_is_noop = true,
                       const char* reason = kBundleUnsupported) {
  using IsKind = bool (json::*)() const noexcept;
  static const std::pair<IsKind, const char*> kKinds[] = {
      {&json::is_boolean, "a boolean"}, {&json::is_number, "a number"},
      {&json::is_string, "a string"},   {&json::is_array, "an array"},
      {&json::is_object, "an object"},
  };
  const auto& [is_kind, kind_name] = kKinds[static_cast<int>(kind)];
  for (const char* key : keys) {
    const json* v = BundleMember(obj, key);
    if (v == nullptr) continue;
    const std::string at = BundleKey(path, key);
    if (!(v->*is_kind)()) return BundleTypeError(*v, at, kind_name);
    const bool noop = v->is_boolean()  ? !v->get<bool>()
                      : v->is_number() ? zero_is_noop && *v == 0
                      : v->is_string() ? v->get_ref<const std::string&>().empty()
                                       : v->empty();
    if (!noop) return BundleError(at, reason);
  }
  return Ok();
}

// The index of the first element whose `key` equals an earlier one's.
template <typename T, typename K>
std::optional<size_t> BundleFirstRepeat(const std::vector<T>& items, K key) {
  for (size_t i = 1; i < items.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (key(items[k]) == key(items[i])) return i;
    }
  }
  return std::nullopt;
}

// runc's spelling only ("CAP_CHOWN"): libcap also takes "cap_chown" and "0", and matches
// a prefix ("CAP_CHOWN5" reads as CAP_CHOWN), so the name is checked whole first.
Result<int> BundleCapability(const std::string& name, const std::string& path) {
  const bool well_formed = name.size() > 4 && name.compare(0, 4, "CAP_") == 0 &&
                           std::all_of(name.begin(), name.end(),
                                       [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; });
  cap_value_t value = 0;
  if (!well_formed || cap_from_name(name.c_str(), &value) != 0) {
    return BundleError(path, "unknown capability " + BundleQuote(name));
  }
  if (value >= cap_max_bits()) {
    return BundleError(path,
                       "capability " + BundleQuote(name) + " is unknown to the running kernel");
  }
  return static_cast<int>(value);
}

Result<OciCapabilities> ParseBundleCapabilities(const json& j, const std::string& path) {
  RETURN_IF_ERROR(
      BundleCheckKeys(j, path, {"bounding", "effective", "permitted", "inheritable", "ambient"}));
  OciCapabilities caps;
  const std::pair<const char*, std::vector<int>*> sets[] = {
      {"bounding", &caps.bounding},   {"effective", &caps.effective},
      {"permitted", &caps.permitted}, {"inheritable", &caps.inheritable},
      {"ambient", &caps.ambient},
  };
  for (const auto& [key, out] : sets) {
    std::vector<std::string> names;
    RETURN_IF_ERROR(BundleOptional(j, path, key, &names));
    for (size_t i = 0; i < names.size(); ++i) {
      ASSIGN_OR_RETURN(int cap, BundleCapability(names[i], BundleIndex(BundleKey(path, key), i)));
      out->push_back(cap);
    }
  }
  return caps;
}

constexpr std::pair<const char*, int> kBundleRlimits[] = {
    {"RLIMIT_CPU", RLIMIT_CPU},           {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_DATA", RLIMIT_DATA},         {"RLIMIT_STACK", RLIMIT_STACK},
    {"RLIMIT_CORE", RLIMIT_CORE},         {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_NPROC", RLIMIT_NPROC},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},   {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},       {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},     {"RLIMIT_RTTIME", RLIMIT_RTTIME},
};

Result<OciRlimit> ParseBundleRlimit(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(j, path, {"type", "soft", "hard"}));
  ASSIGN_OR_RETURN(std::string type, BundleRequired<std::string>(j, path, "type"));
  OciRlimit rl;
  auto known = std::find_if(std::begin(kBundleRlimits), std::end(kBundleRlimits),
                            [&](const auto& e) { return type == e.first; });
  if (known == std::end(kBundleRlimits)) {
    return BundleError(BundleKey(path, "type"), "unknown rlimit " + BundleQuote(type));
  }
  rl.resource = known->second;
  ASSIGN_OR_RETURN(rl.soft, BundleRequired<uint64_t>(j, path, "soft"));
  ASSIGN_OR_RETURN(rl.hard, BundleRequired<uint64_t>(j, path, "hard"));
  if (rl.soft > rl.hard) {
    return BundleError(path, "soft limit " + std::to_string(rl.soft) + " is above hard limit " +
                                 std::to_string(rl.hard));
  }
  return rl;
}

Result<OciUser> ParseBundleUser(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(j, path, {"uid", "gid", "umask", "additionalGids", "username"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kString, {"username"}));
  OciUser user;
  RETURN_IF_ERROR(BundleOptional(j, path, "uid", &user.uid));
  RETURN_IF_ERROR(BundleOptional(j, path, "gid", &user.gid));
  RETURN_IF_ERROR(BundleOptional(j, path, "umask", &user.umask));
  if (user.umask && *user.umask > 0777) {
    return BundleError(BundleKey(path, "umask"), std::to_string(*user.umask) + " is above 0777");
  }
  RETURN_IF_ERROR(BundleOptional(j, path, "additionalGids", &user.additional_gids));
  return user;
}

Status ParseBundleProcessStrings(const json& j, const std::string& path, OciProcess* p) {
  ASSIGN_OR_RETURN(p->args, BundleRequired<std::vector<std::string>>(j, path, "args"));
  if (p->args.empty()) return BundleError(BundleKey(path, "args"), "must not be empty");
  RETURN_IF_ERROR(BundleOptional(j, path, "env", &p->env));
  for (size_t i = 0; i < p->env.size(); ++i) {
    const size_t eq = p->env[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return BundleError(BundleIndex(BundleKey(path, "env"), i),
                         "expected KEY=value, got " + BundleQuote(p->env[i]));
    }
  }
  RETURN_IF_ERROR(BundleOptional(j, path, "cwd", &p->cwd));
  return BundleAbsolute(p->cwd, BundleKey(path, "cwd"));
}

Result<OciProcess> ParseBundleProcess(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(
      j, path,
      {"terminal", "consoleSize", "user", "args", "commandLine", "env", "cwd", "capabilities",
       "rlimits", "noNewPrivileges", "oomScoreAdj", "apparmorProfile", "selinuxLabel", "ioPriority",
       "scheduler", "execCPUAffinity"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kString,
                                  {"commandLine", "apparmorProfile", "selinuxLabel"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kObject,
                                  {"ioPriority", "scheduler", "execCPUAffinity"}));
  OciProcess p;
  RETURN_IF_ERROR(BundleOptional(j, path, "terminal", &p.terminal));
  if (const json* size = BundleMember(j, "consoleSize")) {
    const std::string size_path = BundleKey(path, "consoleSize");
    RETURN_IF_ERROR(BundleCheckKeys(*size, size_path, {"height", "width"}));
    ASSIGN_OR_RETURN(uint32_t height, BundleRequired<uint32_t>(*size, size_path, "height"));
    ASSIGN_OR_RETURN(uint32_t width, BundleRequired<uint32_t>(*size, size_path, "width"));
    p.console_size = {height, width};
  }
  if (const json* user = BundleMember(j, "user")) {
    ASSIGN_OR_RETURN(p.user, ParseBundleUser(*user, BundleKey(path, "user")));
  }
  RETURN_IF_ERROR(ParseBundleProcessStrings(j, path, &p));
  if (const json* caps = BundleMember(j, "capabilities")) {
    ASSIGN_OR_RETURN(p.capabilities,
                     ParseBundleCapabilities(*caps, BundleKey(path, "capabilities")));
  }
  RETURN_IF_ERROR(BundleObjects(j, path, "rlimits", &p.rlimits, ParseBundleRlimit));
  if (auto i = BundleFirstRepeat(p.rlimits, [](const OciRlimit& r) { return r.resource; })) {
    return BundleError(BundleIndex(BundleKey(path, "rlimits"), *i), "duplicate rlimit type");
  }
  RETURN_IF_ERROR(BundleOptional(j, path, "noNewPrivileges", &p.no_new_privileges));
  RETURN_IF_ERROR(BundleOptional(j, path, "oomScoreAdj", &p.oom_score_adj));
  if (p.oom_score_adj && (*p.oom_score_adj < -1000 || *p.oom_score_adj > 1000)) {
    return BundleError(BundleKey(path, "oomScoreAdj"),
                       std::to_string(*p.oom_score_adj) + " is out of range (-1000..1000)");
  }
  return p;
}

Result<OciMount> ParseBundleMount(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(
      j, path, {"destination", "type", "source", "options", "uidMappings", "gidMappings"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kArray, {"uidMappings", "gidMappings"}));
  OciMount m;
  ASSIGN_OR_RETURN(m.destination, BundleRequired<std::string>(j, path, "destination"));
  RETURN_IF_ERROR(BundleAbsolute(m.destination, BundleKey(path, "destination")));
  RETURN_IF_ERROR(BundleOptional(j, path, "type", &m.type));
  RETURN_IF_ERROR(BundleOptional(j, path, "source", &m.source));
  RETURN_IF_ERROR(BundleOptional(j, path, "options", &m.options));
  return m;
}

Result<OciNamespace> ParseBundleNamespace(const json& j, const std::string& path) {
  static const char* const kTypes[] = {"pid", "network", "mount",  "ipc",
                                       "uts", "user",    "cgroup", "time"};
  RETURN_IF_ERROR(BundleCheckKeys(j, path, {"type", "path"}));
  OciNamespace ns;
  ASSIGN_OR_RETURN(ns.type, BundleRequired<std::string>(j, path, "type"));
  if (std::none_of(std::begin(kTypes), std::end(kTypes),
                   [&](const char* t) { return ns.type == t; })) {
    return BundleError(BundleKey(path, "type"), "unknown namespace type " + BundleQuote(ns.type));
  }
  RETURN_IF_ERROR(BundleOptional(j, path, "path", &ns.path));
  if (!ns.path.empty()) RETURN_IF_ERROR(BundleAbsolute(ns.path, BundleKey(path, "path")));
  return ns;
}

Result<OciIdMapping> ParseBundleIdMapping(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(j, path, {"containerID", "hostID", "size"}));
  OciIdMapping m;
  ASSIGN_OR_RETURN(m.container_id, BundleRequired<uint32_t>(j, path, "containerID"));
  ASSIGN_OR_RETURN(m.host_id, BundleRequired<uint32_t>(j, path, "hostID"));
  ASSIGN_OR_RETURN(m.size, BundleRequired<uint32_t>(j, path, "size"));
  if (m.size == 0) return BundleError(BundleKey(path, "size"), "must be positive");
  return m;
}

Status ParseBundleMemory(const json& j, const std::string& path, OciResources* r) {
  RETURN_IF_ERROR(
      BundleCheckKeys(j, path,
                      {"limit", "reservation", "swap", "kernel", "kernelTCP", "swappiness",
                       "disableOOMKiller", "useHierarchy", "checkBeforeUpdate"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kNumber, {"kernel", "kernelTCP"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kNumber, {"swappiness"}, false));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kBoolean,
                                  {"disableOOMKiller", "useHierarchy", "checkBeforeUpdate"}));
  RETURN_IF_ERROR(BundleOptional(j, path, "limit", &r->memory_limit));
  RETURN_IF_ERROR(BundleOptional(j, path, "swap", &r->memory_swap));
  return BundleOptional(j, path, "reservation", &r->memory_reservation);
}

Status ParseBundleCpu(const json& j, const std::string& path, OciResources* r) {
  RETURN_IF_ERROR(BundleCheckKeys(j, path,
                                  {"shares", "quota", "period", "cpus", "mems", "realtimeRuntime",
                                   "realtimePeriod", "idle", "burst"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kNumber,
                                  {"realtimeRuntime", "realtimePeriod", "idle", "burst"}));
  RETURN_IF_ERROR(BundleOptional(j, path, "shares", &r->cpu_shares));
  RETURN_IF_ERROR(BundleOptional(j, path, "quota", &r->cpu_quota));
  RETURN_IF_ERROR(BundleOptional(j, path, "period", &r->cpu_period));
  RETURN_IF_ERROR(BundleOptional(j, path, "cpus", &r->cpuset_cpus));
  return BundleOptional(j, path, "mems", &r->cpuset_mems);
}

// -1 is the spec's "any" for a device rule's numbers.
Status BundleRuleNumber(const json& j, const std::string& path, const char* key,
                        std::optional<int64_t>* out) {
  RETURN_IF_ERROR(BundleOptional(j, path, key, out));
  if (*out && **out < -1) return BundleError(BundleKey(path, key), "must be -1 (any) or above");
  if (*out == -1) out->reset();
  return Ok();
}

Result<OciDeviceRule> ParseBundleDeviceRule(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(j, path, {"allow", "type", "major", "minor", "access"}));
  OciDeviceRule rule;
  ASSIGN_OR_RETURN(rule.allow, BundleRequired<bool>(j, path, "allow"));
  std::string type = "a";
  RETURN_IF_ERROR(BundleOptional(j, path, "type", &type));
  if (type != "a" && type != "c" && type != "b") {
    return BundleError(BundleKey(path, "type"),
                       "expected \"a\", \"c\" or \"b\", got " + BundleQuote(type));
  }
  rule.type = type[0];
  RETURN_IF_ERROR(BundleRuleNumber(j, path, "major", &rule.major));
  RETURN_IF_ERROR(BundleRuleNumber(j, path, "minor", &rule.minor));
  RETURN_IF_ERROR(BundleOptional(j, path, "access", &rule.access));
  const std::string& a = rule.access;
  const bool valid = !a.empty() && a.find_first_not_of("rwm") == std::string::npos;
  if (!valid) {
    return BundleError(BundleKey(path, "access"),
                       "expected a non-empty subset of \"rwm\", got " + BundleQuote(a));
  }
  return rule;
}

Result<OciResources> ParseBundleResources(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(j, path,
                                  {"devices", "memory", "cpu", "pids", "blockIO", "hugepageLimits",
                                   "network", "rdma", "unified"}));
  RETURN_IF_ERROR(
      BundleRefuseSet(j, path, BundleKind::kObject, {"blockIO", "network", "rdma", "unified"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kArray, {"hugepageLimits"}));
  OciResources r;
  if (const json* m = BundleMember(j, "memory")) {
    RETURN_IF_ERROR(ParseBundleMemory(*m, BundleKey(path, "memory"), &r));
  }
  if (const json* c = BundleMember(j, "cpu")) {
    RETURN_IF_ERROR(ParseBundleCpu(*c, BundleKey(path, "cpu"), &r));
  }
  if (const json* p = BundleMember(j, "pids")) {
    const std::string pids_path = BundleKey(path, "pids");
    RETURN_IF_ERROR(BundleCheckKeys(*p, pids_path, {"limit"}));
    RETURN_IF_ERROR(BundleOptional(*p, pids_path, "limit", &r.pids_limit));
  }
  RETURN_IF_ERROR(BundleObjects(j, path, "devices", &r.devices, ParseBundleDeviceRule));
  return r;
}

Result<OciDevice> ParseBundleDevice(const json& j, const std::string& path) {
  RETURN_IF_ERROR(
      BundleCheckKeys(j, path, {"path", "type", "major", "minor", "fileMode", "uid", "gid"}));
  OciDevice d;
  ASSIGN_OR_RETURN(d.path, BundleRequired<std::string>(j, path, "path"));
  if (d.path.rfind("/dev/", 0) != 0 || BundleNormalPath(d.path) != d.path) {
    return BundleError(BundleKey(path, "path"),
                       "expected a normal absolute path under /dev, got " + BundleQuote(d.path));
  }
  ASSIGN_OR_RETURN(std::string type, BundleRequired<std::string>(j, path, "type"));
  if (type != "c" && type != "u" && type != "b" && type != "p") {
    return BundleError(BundleKey(path, "type"),
                       "expected \"c\", \"u\", \"b\" or \"p\", got " + BundleQuote(type));
  }
  d.type = type[0];
  if (d.type == 'p') {
    RETURN_IF_ERROR(BundleOptional(j, path, "major", &d.major));
    RETURN_IF_ERROR(BundleOptional(j, path, "minor", &d.minor));
  } else {
    ASSIGN_OR_RETURN(d.major, BundleRequired<int64_t>(j, path, "major"));
    ASSIGN_OR_RETURN(d.minor, BundleRequired<int64_t>(j, path, "minor"));
  }
  RETURN_IF_ERROR(BundleOptional(j, path, "fileMode", &d.file_mode));
  if (d.file_mode && *d.file_mode > 07777) {
    return BundleError(BundleKey(path, "fileMode"),
                       std::to_string(*d.file_mode) + " is above 07777");
  }
  RETURN_IF_ERROR(BundleOptional(j, path, "uid", &d.uid));
  RETURN_IF_ERROR(BundleOptional(j, path, "gid", &d.gid));
  return d;
}

// The rest of the object is jail/seccomp_profile_parse.h's to check, from the text.
Result<std::string> ParseBundleSeccomp(const json& j, const std::string& path) {
  if (!j.is_object()) return BundleTypeError(j, path, "an object");
  if (const json* flags = BundleMember(j, "flags")) {
    const std::string flags_path = BundleKey(path, "flags");
    ASSIGN_OR_RETURN(auto names, BundleValue<std::vector<std::string>>(*flags, flags_path));
    if (!names.empty()) {
      return BundleError(BundleIndex(flags_path, 0),
                         "seccomp flag " + BundleQuote(names[0]) + " is " + kBundleUnsupported);
    }
  }
  RETURN_IF_ERROR(
      BundleRefuseSet(j, path, BundleKind::kString, {"listenerPath", "listenerMetadata"}));
  json rest = j;
  for (const char* key : {"flags", "listenerPath", "listenerMetadata"}) rest.erase(key);
  return rest.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status ParseBundleLinuxPaths(const json& j, const std::string& path, BundleConfig* cfg) {
  const std::pair<const char*, std::vector<std::string>*> lists[] = {
      {"maskedPaths", &cfg->masked_paths}, {"readonlyPaths", &cfg->readonly_paths}};
  for (const auto& [key, out] : lists) {
    RETURN_IF_ERROR(BundleOptional(j, path, key, out));
    for (size_t i = 0; i < out->size(); ++i) {
      RETURN_IF_ERROR(BundleAbsolute((*out)[i], BundleIndex(BundleKey(path, key), i)));
    }
  }
  static const char* const kPropagations[] = {"",        "private",    "rprivate",
                                              "slave",   "rslave",     "shared",
                                              "rshared", "unbindable", "runbindable"};
  RETURN_IF_ERROR(BundleOptional(j, path, "rootfsPropagation", &cfg->rootfs_propagation));
  if (std::none_of(std::begin(kPropagations), std::end(kPropagations),
                   [&](const char* p) { return cfg->rootfs_propagation == p; })) {
    return BundleError(BundleKey(path, "rootfsPropagation"),
                       "unknown propagation " + BundleQuote(cfg->rootfs_propagation));
  }
  return Ok();
}

Status ParseBundleLinux(const json& j, const std::string& path, BundleConfig* cfg) {
  RETURN_IF_ERROR(BundleCheckKeys(
      j, path,
      {"namespaces", "uidMappings", "gidMappings", "timeOffsets", "devices", "netDevices",
       "cgroupsPath", "rootfsPropagation", "maskedPaths", "readonlyPaths", "mountLabel",
       "resources", "seccomp", "sysctl", "intelRdt", "personality", "memoryPolicy"}));
  RETURN_IF_ERROR(
      BundleRefuseSet(j, path, BundleKind::kObject,
                      {"timeOffsets", "netDevices", "intelRdt", "personality", "memoryPolicy"}));
  RETURN_IF_ERROR(BundleRefuseSet(j, path, BundleKind::kString, {"mountLabel"}));
  RETURN_IF_ERROR(BundleObjects(j, path, "namespaces", &cfg->namespaces, ParseBundleNamespace));
  if (auto i = BundleFirstRepeat(cfg->namespaces, [](const OciNamespace& n) { return n.type; })) {
    return BundleError(BundleIndex(BundleKey(path, "namespaces"), *i),
                       "duplicate namespace type " + BundleQuote(cfg->namespaces[*i].type));
  }
  RETURN_IF_ERROR(BundleObjects(j, path, "uidMappings", &cfg->uid_mappings, ParseBundleIdMapping));
  RETURN_IF_ERROR(BundleObjects(j, path, "gidMappings", &cfg->gid_mappings, ParseBundleIdMapping));
  RETURN_IF_ERROR(BundleOptional(j, path, "sysctl", &cfg->sysctl));
  if (const json* r = BundleMember(j, "resources")) {
    ASSIGN_OR_RETURN(cfg->resources, ParseBundleResources(*r, BundleKey(path, "resources")));
  }
  RETURN_IF_ERROR(BundleOptional(j, path, "cgroupsPath", &cfg->cgroups_path));
  RETURN_IF_ERROR(BundleObjects(j, path, "devices", &cfg->devices, ParseBundleDevice));
  if (const json* s = BundleMember(j, "seccomp")) {
    ASSIGN_OR_RETURN(cfg->seccomp_profile_json, ParseBundleSeccomp(*s, BundleKey(path, "seccomp")));
  }
  return ParseBundleLinuxPaths(j, path, cfg);
}

Status CheckBundleHooks(const json& j, const std::string& path) {
  RETURN_IF_ERROR(BundleCheckKeys(
      j, path,
      {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}));
  return BundleRefuseSet(
      j, path, BundleKind::kArray,
      {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"},
      true, "OCI hooks are not supported by corral-runc");
}

Status ParseBundleRoot(const json& doc, const std::string& bundle_dir, BundleConfig* cfg) {
  const json* root = BundleMember(doc, "root");
  if (root == nullptr) return BundleError("root", "missing");
  RETURN_IF_ERROR(BundleCheckKeys(*root, "root", {"path", "readonly"}));
  ASSIGN_OR_RETURN(std::string path, BundleRequired<std::string>(*root, "root", "path"));
  if (path.empty()) return BundleError("root.path", "must not be empty");
  cfg->root_path = BundleNormalPath(path[0] == '/' ? path : bundle_dir + "/" + path);
  return BundleOptional(*root, "root", "readonly", &cfg->root_readonly);
}

}  // namespace

const OciNamespace* BundleConfig::FindNamespace(const std::string& type) const {
  for (const OciNamespace& ns : namespaces) {
    if (ns.type == type) return &ns;
  }
  return nullptr;
}

Result<BundleConfig> ParseBundleConfig(const nlohmann::json& doc, const std::string& bundle_dir) {
  // Every string here ends up a C string (paths, argv, env): one cut short at a NUL would
  // be used other than checked.
  if (auto field = NulField(doc)) return BundleError(*field, "contains a NUL byte");
  if (!doc.is_object()) return BundleTypeError(doc, "", "an object");
  for (const char* platform : {"solaris", "windows", "vm", "zos"}) {
    if (doc.contains(platform)) return BundleError(platform, "not for Linux; must be absent");
  }
  RETURN_IF_ERROR(BundleCheckKeys(doc, "",
                                  {"ociVersion", "root", "mounts", "process", "hostname",
                                   "domainname", "hooks", "annotations", "linux"}));
  BundleConfig cfg;
  cfg.bundle_dir = bundle_dir;
  ASSIGN_OR_RETURN(cfg.oci_version, BundleRequired<std::string>(doc, "", "ociVersion"));
  if (cfg.oci_version.rfind("1.", 0) != 0) {
    return BundleError("ociVersion", "expected a 1.x version, got " + BundleQuote(cfg.oci_version));
  }
  if (const json* hooks = BundleMember(doc, "hooks")) {
    RETURN_IF_ERROR(CheckBundleHooks(*hooks, "hooks"));
  }
  RETURN_IF_ERROR(ParseBundleRoot(doc, bundle_dir, &cfg));
  RETURN_IF_ERROR(BundleOptional(doc, "", "hostname", &cfg.hostname));
  RETURN_IF_ERROR(BundleOptional(doc, "", "domainname", &cfg.domainname));
  RETURN_IF_ERROR(BundleObjects(doc, "", "mounts", &cfg.mounts, ParseBundleMount));
  const json* process = BundleMember(doc, "process");
  if (process == nullptr) return BundleError("process", "missing");
  ASSIGN_OR_RETURN(cfg.process, ParseBundleProcess(*process, "process"));
  RETURN_IF_ERROR(BundleOptional(doc, "", "annotations", &cfg.annotations));
  if (const json* linux_section = BundleMember(doc, "linux")) {
    RETURN_IF_ERROR(ParseBundleLinux(*linux_section, "linux", &cfg));
  }
  return cfg;
}

Result<BundleConfig> LoadBundleConfig(const std::string& bundle_dir) {
  if (bundle_dir.empty()) return Error(ErrorCode::kInvalidArgument, "bundle directory is empty");
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(bundle_dir, ec);
  if (ec) {
    return Error(ErrorCode::kInvalidArgument,
                 "bundle directory " + BundleQuote(bundle_dir) + ": " + ec.message());
  }
  const std::string dir = BundleNormalPath(absolute.string());
  const std::string file = (dir == "/" ? "" : dir) + "/config.json";
  ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  auto doc = ParseJsonInputOrError(text);
  if (!doc) {
    return Error(ErrorCode::kInvalidArgument, file + ": invalid JSON: " + doc.error().message());
  }
  return ParseBundleConfig(*doc, dir);
}

Result<OciProcess> ParseOciProcess(const json& process, const std::string& path) {
  return ParseBundleProcess(process, path);
}

Result<OciResources> ParseOciResources(const json& resources, const std::string& path) {
  return ParseBundleResources(resources, path);
}

Error ConfigFieldError(const std::string& path, const std::string& reason) {
  return Error(ErrorCode::kInvalidArgument,
               "config.json: " + (path.empty() ? reason : path + ": " + reason));
}

}  // namespace corral::runtime::oci
