// corral-runc's record of one container: `<root>/<id>/state.json` and the start gate's
// socket beside it. `<root>` is the global --root (default /run/corral-runc), mode 0700.
//
// The record is written whole (base/files.h WriteFileWhole) and read by every verb; the
// container's status is not stored but read from the kernel each time, as runc does:
//   stopped  the recorded process is gone or a zombie (compared by its start time, so a
//            recycled pid does not count);
//   paused   its cgroup is frozen;
//   created  `start` has not run (the process waits at the start gate);
//   running  otherwise.
// Verbs on one container take an flock on its directory, so a `start` and a `delete`
// cannot interleave. Parent side.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "cgroups/cgroup.h"

namespace corral::runtime::oci {

inline constexpr const char* kDefaultRuncRoot = "/run/corral-runc";
inline constexpr const char* kStartGateName = "start.sock";

struct ContainerRecord {
  std::string id;
  pid_t pid = 0;
  unsigned long long pid_start_time = 0;  // field 22 of /proc/<pid>/stat
  std::string bundle;
  std::string rootfs;
  std::string created;       // RFC 3339, UTC, nanoseconds
  std::string cgroups_path;  // cgroupfs form ("/default/ID"), after systemd expansion
  bool started = false;
  std::map<std::string, std::string> annotations;
};

enum class ContainerStatus { kCreated, kRunning, kPaused, kStopped };
const char* ContainerStatusName(ContainerStatus status);  // "created", "running", ...

// A container id as runc accepts it: [A-Za-z0-9_+.-]{1,1024}, not "." or "..".
Status CheckContainerId(const std::string& id);

class ContainerStore {
 public:
  explicit ContainerStore(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }
  std::string Dir(const std::string& id) const { return root_ + "/" + id; }

  // Makes <root>/<id> (the root too, 0700); kAlreadyExists if the id is taken. Returns
  // the directory, locked.
  Result<UniqueFd> CreateDir(const std::string& id);
  // Opens and locks <root>/<id>; kNotFound "container ID does not exist".
  Result<UniqueFd> Lock(const std::string& id);

  Status Save(const ContainerRecord& record);
  Result<ContainerRecord> Load(const std::string& id);
  Status Remove(const std::string& id);

 private:
  std::string root_;
};

// The process's start time (field 22 of /proc/<pid>/stat), or 0 if it is gone or a zombie.
unsigned long long ProcessStartTime(pid_t pid);

// Where `record` stands now; `cgroup` (may be null) tells whether it is frozen.
ContainerStatus ReadStatus(const ContainerRecord& record, const cgroups::Cgroup* cgroup);

// The JSON `runc state` prints (ociVersion, id, pid, status, bundle, rootfs, created,
// owner, annotations).
std::string StateJson(const ContainerRecord& record, ContainerStatus status);

// A cgroupsPath as a cgroupfs path: with --systemd-cgroup, "slice:prefix:name" becomes
// "/<expanded slice>/<prefix>-<name>.scope" (a-b.slice -> /a.slice/a-b.slice, as systemd
// nests slices); empty becomes "/corral-runc/<id>". Errors name the field.
Result<std::string> CgroupfsPath(const std::string& cgroups_path, bool systemd,
                                 const std::string& id);

// The cgroup manager for a container's cgroupfs path (parent = its directory) and the
// cgroup's name (its last component).
struct ContainerCgroupRef {
  std::unique_ptr<cgroups::CgroupManager> manager;
  std::string name;
};
Result<ContainerCgroupRef> ContainerCgroupManager(const std::string& cgroupfs_path);

}  // namespace corral::runtime::oci
