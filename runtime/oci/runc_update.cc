// `corral-runc update` and `events` (runc_container.h): a running container's cgroup limits
// changed in place, and its cgroup's figures as runc's "stats" event.
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "runtime/oci/bundle_config.h"
#include "runtime/oci/runc_container.h"
#include "runtime/oci/runc_plan.h"

namespace corral::runtime::oci {

Status UpdateContainer(const GlobalOptions& global, const std::string& id,
                       const std::string& resources_json, std::vector<std::string>* notes) {
  auto resources = ParseJsonInputOrError(resources_json);
  if (!resources || !resources->is_object()) {
    return Error(ErrorCode::kInvalidArgument, "update --resources: not a JSON object");
  }
  ASSIGN_OR_RETURN(OciResources parsed, ParseOciResources(*resources, "linux.resources"));
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(UniqueFd lock, store.Lock(id));
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  ASSIGN_OR_RETURN(auto cgroup, OpenRecordCgroup(record));
  if (ReadStatus(record, cgroup.get()) == ContainerStatus::kStopped) {
    return Error(ErrorCode::kFailedPrecondition, "container not running");
  }
  std::vector<std::string> unapplied;
  cgroups::Limits limits = ResourcesToLimits(parsed, &unapplied);
  for (const std::string& what : unapplied) notes->push_back(what + ": not applied");
  ASSIGN_OR_RETURN(auto warnings, cgroup->ApplyLimits(limits, false));
  notes->insert(notes->end(), warnings.begin(), warnings.end());
  return Ok();
}

Result<std::string> ContainerStatsEvent(const GlobalOptions& global, const std::string& id) {
  ContainerStore store(global.root);
  ASSIGN_OR_RETURN(ContainerRecord record, store.Load(id));
  ASSIGN_OR_RETURN(auto cgroup, OpenRecordCgroup(record));
  if (ReadStatus(record, cgroup.get()) == ContainerStatus::kStopped) {
    return Error(ErrorCode::kFailedPrecondition, "container not running");
  }
  ASSIGN_OR_RETURN(cgroups::Stats stats, cgroup->ReadStats());
  nlohmann::json cpu_usage = nlohmann::json::object();
  if (stats.cpu_user_usec && stats.cpu_system_usec) {
    cpu_usage = {{"total", (*stats.cpu_user_usec + *stats.cpu_system_usec) * 1000},
                 {"user", *stats.cpu_user_usec * 1000},
                 {"kernel", *stats.cpu_system_usec * 1000}};
  }
  nlohmann::json memory_usage = nlohmann::json::object();
  if (stats.memory_current_bytes) memory_usage["usage"] = *stats.memory_current_bytes;
  if (stats.memory_peak_bytes) memory_usage["max"] = *stats.memory_peak_bytes;
  nlohmann::json data = {{"cpu", {{"usage", cpu_usage}}},
                         {"memory", {{"usage", memory_usage}, {"oom_kills", stats.oom_kills}}},
                         {"pids", {{"current", stats.pids_current.value_or(0)}}}};
  return nlohmann::json{{"type", "stats"}, {"id", id}, {"data", data}}.dump();
}

}  // namespace corral::runtime::oci
