#include "runtime/spec/spec_json.h"

#include <nlohmann/json.hpp>
#include <type_traits>

#include "base/json_input.h"
#include "base/json_integers.h"
#include "base/json_nul.h"

namespace corral::runtime {

// nlohmann's adl hooks; field names match config.example.yaml where they exist there.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NamespaceSpec, pid, uts, ipc, net, cgroup)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MountSpec, host_path, container_path, read_only)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CgroupSpec, driver, parent)

namespace {

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
  nlohmann::json j = {{"mode", n.mode},
                      {"allow", n.allow},
                      {"deny", n.deny},
                      {"max_connections", n.max_connections}};
  PutOptional(j, "max_bytes", n.max_bytes);
  return j;
}

NetworkSpec NetworkFromJson(const nlohmann::json& j) {
  NetworkSpec n;
  j.at("mode").get_to(n.mode);
  j.at("allow").get_to(n.allow);
  j.at("deny").get_to(n.deny);
  GetInteger(j, "max_connections", &n.max_connections);
  GetOptional(j, "max_bytes", &n.max_bytes);
  return n;
}

nlohmann::json LandlockToJson(const LandlockSpec& l) {
  return {{"enabled", l.enabled}, {"tcp", l.tcp}, {"omit", l.omit}};
}

LandlockSpec LandlockFromJson(const nlohmann::json& j) {
  LandlockSpec l;
  j.at("enabled").get_to(l.enabled);
  j.at("tcp").get_to(l.tcp);
  if (j.contains("omit")) j.at("omit").get_to(l.omit);
  return l;
}

}  // namespace

std::string SpecToJson(const JailSpec& s) {
  nlohmann::json j = {{"mode", s.mode},
                      {"argv", s.argv},
                      {"env", s.env},
                      {"mounts", s.mounts},
                      {"hostname", s.hostname},
                      {"rootless", s.rootless},
                      {"identity", s.identity},
                      {"identity_key", s.identity_key},
                      {"uid", s.uid},
                      {"gid", s.gid},
                      {"namespaces", s.namespaces},
                      {"seccomp_profile", s.seccomp_profile},
                      {"limits", LimitsToJson(s.limits)},
                      {"cgroups", s.cgroups},
                      {"network", NetworkToJson(s.network)},
                      {"landlock", LandlockToJson(s.landlock)},
                      {"unsafe", UnsafeToJson(s.unsafe)}};
  PutOptional(j, "rootfs", s.rootfs);
  PutOptional(j, "skills_dir", s.skills_dir);
  PutOptional(j, "user_data_dir", s.user_data_dir);
  PutOptional(j, "acp_workspace_dir", s.acp_workspace_dir);
  PutOptional(j, "workdir", s.workdir);
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
    if (j.contains("mode")) j.at("mode").get_to(s.mode);  // a record from before it: process
    j.at("argv").get_to(s.argv);
    j.at("env").get_to(s.env);
    j.at("mounts").get_to(s.mounts);
    j.at("hostname").get_to(s.hostname);
    if (j.contains("rootless")) j.at("rootless").get_to(s.rootless);
    // Records written before identities existed ran with the host's ids: keep that.
    s.identity = j.contains("identity") ? j.at("identity").get<std::string>() : "host-uid";
    if (j.contains("identity_key")) j.at("identity_key").get_to(s.identity_key);
    GetInteger(j, "uid", &s.uid);
    GetInteger(j, "gid", &s.gid);
    j.at("namespaces").get_to(s.namespaces);
    j.at("seccomp_profile").get_to(s.seccomp_profile);
    s.limits = LimitsFromJson(j.at("limits"));
    j.at("cgroups").get_to(s.cgroups);
    s.unsafe = UnsafeFromJson(j.at("unsafe"));
    if (j.contains("network")) {
      s.network = NetworkFromJson(j.at("network"));
    } else if (!s.namespaces.net) {
      // A record from before network.mode: no network namespace was the host's network.
      s.network.mode = "host";
    }
    // A record from before Landlock keeps the default (auto).
    if (j.contains("landlock")) s.landlock = LandlockFromJson(j.at("landlock"));
    GetOptional(j, "rootfs", &s.rootfs);
    GetOptional(j, "skills_dir", &s.skills_dir);
    GetOptional(j, "user_data_dir", &s.user_data_dir);
    GetOptional(j, "acp_workspace_dir", &s.acp_workspace_dir);
    GetOptional(j, "workdir", &s.workdir);
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidArgument, std::string("sandbox spec: ") + e.what());
  }
}

}  // namespace corral::runtime
