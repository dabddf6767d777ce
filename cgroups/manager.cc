#include "cgroups/cgroup.h"
#include "cgroups/internal.h"
#include "cgroups/v1_driver.h"
#include "cgroups/v2_driver.h"

namespace corral::cgroups {

Result<std::unique_ptr<CgroupManager>> CgroupManager::Create(const ManagerOptions& options) {
  ASSIGN_OR_RETURN(HierarchyInfo info, Detect(options));
  if (!info.driver) return Error(ErrorCode::kUnsupported, info.unusable_reason);
  std::string parent = options.parent;
  // On v2 an absolute parent may also be given as a filesystem path inside the mount (a
  // delegated subtree, e.g. /sys/fs/cgroup/user.slice/.../corral).
  if (*info.driver == Driver::kV2 && parent.rfind(info.v2_mount + "/", 0) == 0) {
    parent = parent.substr(info.v2_mount.size());
  }
  ASSIGN_OR_RETURN(auto components, internal::ParentComponents(parent));
  Result<std::unique_ptr<CgroupManager>> mgr =
      *info.driver == Driver::kV2 ? internal::V2Manager::Create(info, components, options)
                                  : internal::V1Manager::Create(info, components, options);
  if (!mgr) {
    return mgr.error().WithContext(std::string("cgroup ") + DriverName(*info.driver) + " parent '" +
                                   options.parent + "'");
  }
  return mgr;
}

}  // namespace corral::cgroups
