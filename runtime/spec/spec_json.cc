#include "runtime/spec/spec_json.h"

#include <nlohmann/json.hpp>

#include "base/json_integers.h"
#include "base/json_nul.h"

namespace corral::runtime {

// nlohmann's adl hooks; field names match config.example.yaml where they exist there.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NamespaceSpec, pid, uts, ipc, net, cgroup)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MountSpec, host_path, container_path, read_only)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CgroupSpec, driver, parent)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UnsafeSpec, allow_root, allow_missing_limits,
                                   allow_unconfined_seccomp, host_network)

namespace {

template <typename T>
void PutOptional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
void GetOptional(const nlohmann::json& j, const char* key, std::optional<T>* v) {
  if (!j.contains(key) || j.at(key).is_null()) {
    v->reset();
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

}  // namespace

std::string SpecToJson(const JailSpec& s) {
  nlohmann::json j = {{"argv", s.argv},
                      {"env", s.env},
                      {"mounts", s.mounts},
                      {"hostname", s.hostname},
                      {"uid", s.uid},
                      {"gid", s.gid},
                      {"namespaces", s.namespaces},
                      {"seccomp_profile", s.seccomp_profile},
                      {"limits", LimitsToJson(s.limits)},
                      {"cgroups", s.cgroups},
                      {"unsafe", s.unsafe}};
  PutOptional(j, "rootfs", s.rootfs);
  PutOptional(j, "skills_dir", s.skills_dir);
  PutOptional(j, "user_data_dir", s.user_data_dir);
  PutOptional(j, "acp_workspace_dir", s.acp_workspace_dir);
  PutOptional(j, "workdir", s.workdir);
  return j.dump(2);
}

Result<JailSpec> SpecFromJson(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    // Before any field is used: a string with a NUL would reach the kernel cut short.
    if (auto nul = NulProblem(j))
      return Error(ErrorCode::kInvalidArgument, "sandbox spec: " + *nul);
    JailSpec s;
    j.at("argv").get_to(s.argv);
    j.at("env").get_to(s.env);
    j.at("mounts").get_to(s.mounts);
    j.at("hostname").get_to(s.hostname);
    GetInteger(j, "uid", &s.uid);
    GetInteger(j, "gid", &s.gid);
    j.at("namespaces").get_to(s.namespaces);
    j.at("seccomp_profile").get_to(s.seccomp_profile);
    s.limits = LimitsFromJson(j.at("limits"));
    j.at("cgroups").get_to(s.cgroups);
    j.at("unsafe").get_to(s.unsafe);
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
