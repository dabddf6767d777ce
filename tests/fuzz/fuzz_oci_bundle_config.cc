// An OCI bundle's config.json as corral-runc reads it (runtime/oci/bundle_config.h), then
// the parts of its plan that need no kernel: the cgroupsPath forms (runc_state.h) and the
// cgroup limits (runc_plan.h), and the seccomp profile it carries (jail/seccomp.h). What the parser
// accepts is checked against its contract; what it refuses must say "config.json: " and a reason.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "jail/seccomp.h"
#include "runtime/oci/bundle_config.h"
#include "runtime/oci/runc_plan.h"
#include "runtime/oci/runc_state.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::runtime::oci;
  nlohmann::json doc = nlohmann::json::parse(corral::fuzz::AsString(data, size), nullptr, false);
  if (doc.is_discarded() || doc.is_null()) return 0;
  auto config = ParseBundleConfig(doc, "/bundle");
  if (!config) {
    if (config.error().message().rfind("config.json: ", 0) != 0) {
      corral::fuzz::Fail("a refusal does not name config.json", config.error().message());
    }
    return 0;
  }
  if (config->root_path.empty() || config->root_path.front() != '/') {
    corral::fuzz::Fail("root.path is not absolute", config->root_path);
  }
  if (config->process.args.empty()) corral::fuzz::Fail("process.args is empty", doc.dump());
  for (const OciMount& mount : config->mounts) {
    if (mount.destination.empty() || mount.destination.front() != '/') {
      corral::fuzz::Fail("a mount destination is not absolute", mount.destination);
    }
  }
  for (const OciRlimit& limit : config->process.rlimits) {
    if (limit.soft > limit.hard) corral::fuzz::Fail("an rlimit's soft is above its hard", "");
  }
  for (bool systemd : {false, true}) {
    auto path = CgroupfsPath(config->cgroups_path, systemd, "c1");
    if (path && (path->empty() || path->front() != '/' || path->find("..") != std::string::npos)) {
      corral::fuzz::Fail("a cgroupfs path is not absolute or climbs", *path);
    }
  }
  // The config's own profile, compiled the way corral-runc takes a profile written for
  // runc (shadowed rules left out, not refused).
  if (config->seccomp_profile_json) {
    std::vector<std::string> dropped;
    (void)corral::jail::CompileRuncSeccompProfile(*config->seccomp_profile_json, "fuzz", &dropped);
  }
  std::vector<std::string> unapplied;
  corral::cgroups::Limits limits = ResourcesToLimits(config->resources, &unapplied);
  if (limits.memory_bytes && *limits.memory_bytes <= 0) {
    corral::fuzz::Fail("a memory limit of zero or less", std::to_string(*limits.memory_bytes));
  }
  if (limits.cpus && !(*limits.cpus > 0 && std::isfinite(*limits.cpus))) {
    corral::fuzz::Fail("a CPU limit of zero, less or infinite", std::to_string(*limits.cpus));
  }
  return 0;
}
