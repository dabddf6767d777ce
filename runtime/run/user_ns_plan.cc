#include "runtime/run/user_ns_plan.h"

#include <pwd.h>
#include <unistd.h>

#include "base/files.h"
#include "runtime/run/identity.h"

namespace corral::runtime {

namespace {

constexpr const char* kNewUidMap = "/usr/bin/newuidmap";
constexpr const char* kNewGidMap = "/usr/bin/newgidmap";

std::string CallerName() {
  // getpwuid_r: the daemon calls this from worker threads.
  passwd pw;
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(::geteuid(), &pw, buf, sizeof buf, &found) != 0 || found == nullptr) return "";
  return pw.pw_name;
}

std::optional<SubordinateRange> RangeFromFile(const char* path, const std::string& name,
                                              uint32_t id) {
  auto text = ReadFile(path);
  if (!text) return std::nullopt;
  return FindSubordinateRange(*text, name, id);
}

}  // namespace

bool RunsRootless(const JailSpec& spec) { return spec.rootless || ::geteuid() != 0; }

// Root may map any id: the jail's ids keep the host ids they have in root mode, so that
// --rootless adds a user namespace without giving the command root's files. In root mode
// those are the reserved identity's where it applies (runtime/run/identity.h).
uid_t HostUidOf(const JailSpec& spec) {
  auto id = ResolveIdentity(spec);
  return id ? id->uid : ::geteuid() == 0 ? spec.uid : ::geteuid();
}
gid_t HostGidOf(const JailSpec& spec) {
  auto id = ResolveIdentity(spec);
  return id ? id->gid : ::geteuid() == 0 ? spec.gid : ::getegid();
}

std::vector<jail::IdMapping> MapAround(uint32_t inside, uint32_t caller,
                                       const std::optional<SubordinateRange>& range) {
  std::vector<jail::IdMapping> map = {{inside, caller, 1}};
  if (!range) return map;
  uint32_t below = std::min(inside, range->count);
  if (below > 0) map.push_back({0, range->start, below});
  uint32_t above = range->count - below;
  if (above > 0) map.push_back({inside + 1, range->start + below, above});
  return map;
}

Result<jail::UserNamespacePlan> PlanUserNamespace(const JailSpec& spec) {
  jail::UserNamespacePlan ns;
  ns.enabled = true;
  const bool root = ::geteuid() == 0;
  const std::string name = CallerName();
  auto uids = RangeFromFile("/etc/subuid", name, ::geteuid());
  auto gids = RangeFromFile("/etc/subgid", name, ::geteuid());  // keyed by user, too
  // Ranges only in pairs, and (unprivileged) only where the setuid helpers are installed.
  const bool helpers = ::access(kNewUidMap, X_OK) == 0 && ::access(kNewGidMap, X_OK) == 0;
  if (!uids || !gids || (!root && !helpers)) {
    uids.reset();
    gids.reset();
  }
  ns.uid_map = MapAround(spec.uid, HostUidOf(spec), uids);
  ns.gid_map = MapAround(spec.gid, HostGidOf(spec), gids);
  if (!root && uids) {
    ns.newuidmap = kNewUidMap;
    ns.newgidmap = kNewGidMap;
  }
  ns.deny_setgroups = !root && !uids;
  // The init is the range's uid 0 when there is a range, else the command's uid itself.
  ns.init_uid = uids ? 0 : spec.uid;
  ns.init_gid = gids ? 0 : spec.gid;
  return ns;
}

}  // namespace corral::runtime
