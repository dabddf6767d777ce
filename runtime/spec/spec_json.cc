#include "runtime/spec/spec_json.h"

#include <nlohmann/json.hpp>
#include <type_traits>

#include "base/json_input.h"
#include "base/json_integers.h"
#include "base/json_nul.h"

namespace corral::runtime {

// nlohmann's adl hooks; field names match config.example.yaml where they exist there.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NamespaceSpec, pid, uts, ipc, net, cgroup)

namespace {

// A mode's value (runtime/spec/modes.h) at `key` of `j`, spelled as in YAML. A bad one is
// kept in *problem (the first only) by its field path, in Validate()'s words, and
// SpecFromJson then refuses the spec.
template <typename E>
void GetMode(const nlohmann::json& j, const char* key, const std::string& field, E* out,
             std::string* problem) {
  const std::string text = j.at(key).get<std::string>();
  if (std::optional<E> mode = ParseMode<E>(text)) {
    *out = *mode;
  } else if (problem->empty()) {
    *problem = field + ": " + BadModeText<E>(text);
  }
}

template <typename T>
void PutOptional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
void GetOptional(const nlohmann::json& j, const char* key, std::optional<T>* v) {
  if (!j.contains(key) || j.at(key).is_null()) {
    v->reset();
  } else if constexpr (std::is_integral_v<T>) {
    T x;
    GetInteger(j, key, &x);  // a plain get<T>() of 1e30 is undefined behaviour
    *v = x;
  } else {
    *v = j.at(key).get<T>();
  }
}

}  // namespace

// A volume's fields only where it is one: a plain mount reads as before, and a record
// written before volumes (without them) still reads.
void to_json(nlohmann::json& j, const MountSpec& m) {
  j = {
      {"host_path", m.host_path}, {"container_path", m.container_path}, {"read_only", m.read_only}};
  if (m.volume.empty()) return;
  j["volume"] = m.volume;
  j["image"] = m.image;
  PutOptional(j, "disk_uid", m.disk_uid);
  PutOptional(j, "disk_gid", m.disk_gid);
}

void from_json(const nlohmann::json& j, MountSpec& m) {
  j.at("host_path").get_to(m.host_path);
  j.at("container_path").get_to(m.container_path);
  j.at("read_only").get_to(m.read_only);
  m.volume = j.value("volume", std::string());
  m.image = j.value("image", false);
  GetOptional(j, "disk_uid", &m.disk_uid);
  GetOptional(j, "disk_gid", &m.disk_gid);
}

namespace {

nlohmann::json LimitsToJson(const LimitsSpec& l) {
  nlohmann::json j = {{"memory_bytes", l.memory_bytes},
                      {"cpus", l.cpus},
                      {"pids", l.pids},
                      {"timeout_seconds", l.timeout_seconds},
                      {"output_limit_bytes", l.output_limit_bytes},
                      {"tmp_size_bytes", l.tmp_size_bytes},
                      {"file_size_bytes", l.file_size_bytes},
                      {"open_files", l.open_files},
                      {"kill_grace_seconds", l.kill_grace_seconds}};
  PutOptional(j, "cpu_time_seconds", l.cpu_time_seconds);
  return j;
}

LimitsSpec LimitsFromJson(const nlohmann::json& j) {
  LimitsSpec l;
  GetInteger(j, "memory_bytes", &l.memory_bytes);
  j.at("cpus").get_to(l.cpus);
  GetInteger(j, "pids", &l.pids);
  j.at("timeout_seconds").get_to(l.timeout_seconds);
  GetInteger(j, "output_limit_bytes", &l.output_limit_bytes);
  GetInteger(j, "tmp_size_bytes", &l.tmp_size_bytes);
  GetInteger(j, "file_size_bytes", &l.file_size_bytes);
  GetInteger(j, "open_files", &l.open_files);
  j.at("kill_grace_seconds").get_to(l.kill_grace_seconds);
  GetOptional(j, "cpu_time_seconds", &l.cpu_time_seconds);
  return l;
}

nlohmann::json UnsafeToJson(const UnsafeSpec& u) {
  return {{"allow_root", u.allow_root},
          {"allow_missing_limits", u.allow_missing_limits},
          {"allow_unconfined_seccomp", u.allow_unconfined_seccomp},
          {"host_network", u.host_network},
          {"network_resolve", u.network_resolve}};
}

UnsafeSpec UnsafeFromJson(const nlohmann::json& j) {
  UnsafeSpec u;
  j.at("allow_root").get_to(u.allow_root);
  j.at("allow_missing_limits").get_to(u.allow_missing_limits);
  j.at("allow_unconfined_seccomp").get_to(u.allow_unconfined_seccomp);
  j.at("host_network").get_to(u.host_network);
  if (j.contains("network_resolve")) j.at("network_resolve").get_to(u.network_resolve);
  return u;
}

nlohmann::json NetworkToJson(const NetworkSpec& n) {
  nlohmann::json j = {{"mode", std::string(Name(n.mode))},
                      {"allow", n.allow},
                      {"deny", n.deny},
                      {"max_connections", n.max_connections}};
  PutOptional(j, "max_bytes", n.max_bytes);
  return j;
}

NetworkSpec NetworkFromJson(const nlohmann::json& j, std::string* problem) {
  NetworkSpec n;
  GetMode(j, "mode", "network.mode", &n.mode, problem);
  j.at("allow").get_to(n.allow);
  j.at("deny").get_to(n.deny);
  GetInteger(j, "max_connections", &n.max_connections);
  GetOptional(j, "max_bytes", &n.max_bytes);
  return n;
}

nlohmann::json LandlockToJson(const LandlockSpec& l) {
  return {{"enabled", std::string(Name(l.enabled))}, {"tcp", l.tcp}, {"omit", l.omit}};
}

LandlockSpec LandlockFromJson(const nlohmann::json& j, std::string* problem) {
  LandlockSpec l;
  GetMode(j, "enabled", "landlock.enabled", &l.enabled, problem);
  j.at("tcp").get_to(l.tcp);
  if (j.contains("omit")) j.at("omit").get_to(l.omit);
  return l;
}

nlohmann::json CgroupsToJson(const CgroupSpec& c) {
  return {{"driver", std::string(Name(c.driver))}, {"parent", c.parent}};
}

CgroupSpec CgroupsFromJson(const nlohmann::json& j, std::string* problem) {
  CgroupSpec c;
  GetMode(j, "driver", "cgroups.driver", &c.driver, problem);
  j.at("parent").get_to(c.parent);
  return c;
}

}  // namespace

std::string SpecToJson(const JailSpec& s) {
  nlohmann::json j = {{"mode", std::string(Name(s.mode))},
                      {"argv", s.argv},
                      {"env", s.env},
                      {"mounts", s.mounts},
                      {"hostname", s.hostname},
                      {"rootless", s.rootless},
                      {"identity", std::string(Name(s.identity))},
                      {"identity_key", s.identity_key},
                      {"identity_claimed_key", s.identity_claimed_key},
                      {"uid", s.uid},
                      {"gid", s.gid},
                      {"namespaces", s.namespaces},
                      {"seccomp_profile", s.seccomp_profile},
                      {"limits", LimitsToJson(s.limits)},
                      {"cgroups", CgroupsToJson(s.cgroups)},
                      {"network", NetworkToJson(s.network)},
                      {"landlock", LandlockToJson(s.landlock)},
                      {"unsafe", UnsafeToJson(s.unsafe)}};
  PutOptional(j, "rootfs", s.rootfs);
  PutOptional(j, "skills_dir", s.skills_dir);
  PutOptional(j, "user_data_dir", s.user_data_dir);
  PutOptional(j, "acp_workspace_dir", s.acp_workspace_dir);
  PutOptional(j, "workdir", s.workdir);
  if (s.workspace_overlay) {  // absent otherwise: records read as before
    j["workspace_overlay"] = true;
    j["workspace_overlay_dir"] = s.workspace_overlay_dir;
    if (!s.workspace_upper.empty()) j["workspace_upper"] = s.workspace_upper;
    if (!s.workspace_layers.empty()) j["workspace_layers"] = s.workspace_layers;
  }
  return j.dump(2);
}

Result<JailSpec> SpecFromJson(const std::string& text) {
  auto parsed = ParseJsonInputOrError(text);
  if (!parsed) return parsed.error().WithContext("sandbox spec");
  try {
    const nlohmann::json& j = *parsed;
    // Before any field is used: a string with a NUL would reach the kernel cut short.
    if (auto nul = NulProblem(j))
      return Error(ErrorCode::kInvalidArgument, "sandbox spec: " + *nul);
    JailSpec s;
    std::string problem;  // the first bad mode; the spec is not returned with one
    // A record from before `mode` ran process.
    if (j.contains("mode")) GetMode(j, "mode", "mode", &s.mode, &problem);
    j.at("argv").get_to(s.argv);
    j.at("env").get_to(s.env);
    j.at("mounts").get_to(s.mounts);
    j.at("hostname").get_to(s.hostname);
    if (j.contains("rootless")) j.at("rootless").get_to(s.rootless);
    // Records written before identities existed ran with the host's ids: keep that.
    s.identity = IdentityMode::kHostUid;
    if (j.contains("identity")) GetMode(j, "identity", "identity", &s.identity, &problem);
    if (j.contains("identity_key")) j.at("identity_key").get_to(s.identity_key);
    if (j.contains("identity_claimed_key")) {
      j.at("identity_claimed_key").get_to(s.identity_claimed_key);
    }
    GetInteger(j, "uid", &s.uid);
    GetInteger(j, "gid", &s.gid);
    j.at("namespaces").get_to(s.namespaces);
    j.at("seccomp_profile").get_to(s.seccomp_profile);
    s.limits = LimitsFromJson(j.at("limits"));
    s.cgroups = CgroupsFromJson(j.at("cgroups"), &problem);
    s.unsafe = UnsafeFromJson(j.at("unsafe"));
    if (j.contains("network")) {
      s.network = NetworkFromJson(j.at("network"), &problem);
    } else if (!s.namespaces.net) {
      // A record from before network.mode: no network namespace was the host's network.
      s.network.mode = NetworkMode::kHost;
    }
    // A record from before Landlock keeps the default (auto).
    if (j.contains("landlock")) s.landlock = LandlockFromJson(j.at("landlock"), &problem);
    GetOptional(j, "rootfs", &s.rootfs);
    GetOptional(j, "skills_dir", &s.skills_dir);
    GetOptional(j, "user_data_dir", &s.user_data_dir);
    GetOptional(j, "acp_workspace_dir", &s.acp_workspace_dir);
    GetOptional(j, "workdir", &s.workdir);
    s.workspace_overlay = j.value("workspace_overlay", false);
    s.workspace_overlay_dir = j.value("workspace_overlay_dir", std::string());
    s.workspace_upper = j.value("workspace_upper", std::string());
    if (j.contains("workspace_layers")) j.at("workspace_layers").get_to(s.workspace_layers);
    if (!problem.empty()) return Error(ErrorCode::kInvalidArgument, "sandbox spec: " + problem);
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidArgument, std::string("sandbox spec: ") + e.what());
  }
}

}  // namespace corral::runtime
