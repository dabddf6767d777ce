#include "runtime/pool/warm_claim.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "jail/mounts.h"
#include "jail/syscalls.h"
#include "runtime/run/id_mapped_mount.h"
#include "runtime/run/identity.h"
#include "runtime/run/planner.h"
#include "runtime/sandboxes/mount_switch.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec_json.h"

namespace corral::runtime {

namespace {

Status MkdirMode(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return Ok();
  return Error::FromErrno(errno, "mkdir " + path);
}

void RemovePlaceholders(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // our own directories; best effort
}

// The spec as comparable text, with the per-thread directories and argv left out. Through
// a JSON round trip first: the warm one was read back from its record.
std::string ThreadlessSpecText(JailSpec spec) {
  spec.user_data_dir.reset();
  spec.acp_workspace_dir.reset();
  spec.argv.clear();
  // Named after the sandbox (PinIdentity), as the directories are after the thread: under
  // a reserved identity the claim keeps the warm sandbox's ids (ClaimedIdentity).
  spec.identity_key.clear();
  spec.identity_claimed_key.clear();
  spec.mounts.clear();  // compared apart: the claim may add some (LateMounts)
  auto again = SpecFromJson(SpecToJson(spec));
  return again ? SpecToJson(*again) : "unreadable: " + again.error().message();
}

// The mounts `requested` has beyond the warm sandbox's: bound when it is claimed (DeerFlow
// sends skills views and /mnt/acp-workspace per request; late-bound mounts are the point of
// a claim). Every warm mount must be asked for too; parents before children, as a cold
// create orders them (runtime/run/root_layout.cc).
Result<std::vector<MountSpec>> LateMounts(const JailSpec& warm, const JailSpec& requested) {
  std::vector<MountSpec> late = requested.mounts;
  for (const MountSpec& m : warm.mounts) {
    auto same = [&](const MountSpec& r) {
      return r.host_path == m.host_path && r.container_path == m.container_path &&
             r.read_only == m.read_only;
    };
    auto it = std::find_if(late.begin(), late.end(), same);
    if (it == late.end()) {
      return Error(ErrorCode::kInvalidArgument, "the warm sandbox has the mount " +
                                                    m.container_path +
                                                    " that the request does not ask for");
    }
    late.erase(it);
  }
  std::stable_sort(late.begin(), late.end(), [](const MountSpec& a, const MountSpec& b) {
    return a.container_path < b.container_path;
  });
  return late;
}

// Mounts the thread's directories over the placeholders inside the running sandbox, and
// the late mounts at their places. `idmap_userns` >= 0: the thread's directories are bound
// with that id mapping (ClaimedIdentity).
Status SwitchMounts(const SandboxRecord& warm, const JailSpec& spec,
                    const std::vector<MountSpec>& late, int idmap_userns) {
  std::vector<MountSwitch> mounts;
  auto add = [&](const std::string& host, const std::string& jail_path, bool read_only,
                 bool replace, bool idmapped) -> Status {
    MountSwitch m;
    m.host_path = host;
    m.jail_path = jail_path;
    m.replace = replace;
    struct stat st;
    if (::stat(host.c_str(), &st) != 0) return Error::FromErrno(errno, host);
    m.is_dir = S_ISDIR(st.st_mode);
    if (!replace) m.prefixes = MountPointPrefixes(jail_path);
    // In corral's (the host's) mount namespace, as a cold create's plan opens them, and
    // with the same attributes: nosuid, nodev, private; read-only as asked.
    ASSIGN_OR_RETURN(m.tree, jail::PrepareBindTree(host, read_only));
    if (idmapped) {
      if (jail::sys::MountSetattrIdmap(m.tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE,
                                       idmap_userns) != 0) {
        return Error::FromErrno(errno, "an id-mapped bind of " + host +
                                           " (the thread's ids shown as the warm sandbox's; "
                                           "its file system must support id-mapped mounts)");
      }
    }
    mounts.push_back(std::move(m));
    return Ok();
  };
  const bool idmapped = idmap_userns >= 0;
  if (spec.user_data_dir) {
    RETURN_IF_ERROR(add(*spec.user_data_dir, kUserDataPath, false, true, idmapped));
  }
  if (spec.acp_workspace_dir) {
    RETURN_IF_ERROR(add(*spec.acp_workspace_dir, kAcpWorkspacePath, true, true, idmapped));
  }
  for (const MountSpec& m : late) {
    RETURN_IF_ERROR(add(m.host_path, m.container_path, m.read_only, false, false));
  }
  return SwitchMountsInSandbox({"warm sandbox " + warm.name, warm.init_pid, warm.init_start_ticks},
                               mounts);
}

}  // namespace

std::string WarmDirOf(const SandboxStore& store, const std::string& name) {
  return store.root() + "/warm/" + name;
}

Result<SandboxRecord> CreateWarmSandbox(const std::string& name, JailSpec spec) {
  if (!IsValidSandboxName(name)) {
    return Error(ErrorCode::kInvalidArgument, "warm sandbox name '" + name + "' is not valid");
  }
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  const std::string dir = WarmDirOf(store, name);
  RETURN_IF_ERROR(MkdirMode(store.root() + "/warm", 0700));
  if (::mkdir(dir.c_str(), 0755) != 0) return Error::FromErrno(errno, "mkdir " + dir);
  // user-data/{workspace,uploads,outputs} are made by CreateSandbox's PrepareHostDirs,
  // owned by the jail's uid as a thread's are; the spec's validation wants both here.
  spec.user_data_dir = dir + "/user-data";
  spec.acp_workspace_dir = dir + "/acp-workspace";
  for (const std::string& d : {*spec.user_data_dir, *spec.acp_workspace_dir}) {
    if (Status st = MkdirMode(d, 0755); !st) {
      RemovePlaceholders(dir);
      return st.error();
    }
  }
  CreateRequest request;
  request.spec = std::move(spec);
  request.name = name;
  request.idle_timeout_seconds = 0;  // warm sandboxes wait; the claim sets the thread's
  auto record = CreateSandbox(request);
  if (!record) RemovePlaceholders(dir);
  return record;
}

Status RemoveWarmSandbox(const std::string& name) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  Status st = RemoveSandbox(name);
  RemovePlaceholders(WarmDirOf(store, name));
  if (!st && st.error().code() != ErrorCode::kNotFound) return st;
  return Ok();
}

Result<SandboxRecord> ClaimWarmSandbox(const std::string& from_name, const std::string& to_name,
                                       const JailSpec& requested, double idle_timeout_seconds) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  bool renamed = false;
  // Never a half-claimed sandbox: whatever failed, the warm one goes (and `to_name` with
  // it once it was ours).
  auto fail = [&](Error e) -> Error {
    if (renamed) (void)RemoveSandbox(to_name);
    (void)RemoveWarmSandbox(from_name);
    return e;
  };
  if (!IsValidSandboxName(to_name)) {
    return fail(Error(ErrorCode::kInvalidArgument, "sandbox name '" + to_name + "' is not valid"));
  }
  if (store.Find(to_name)) {
    return fail(
        Error(ErrorCode::kAlreadyExists, "a sandbox named '" + to_name + "' already exists"));
  }
  auto warm = store.Find(from_name);
  if (!warm) return fail(warm.error());
  // Exclusive for the whole claim: no exec starts in it half-way, no reaper takes it.
  auto lock = store.Lock(from_name, /*shared=*/false, /*wait=*/false);
  if (!lock) return fail(lock.error());
  warm = store.Find(from_name);  // as it is now that we hold it
  // As CreateSandbox records it, so that the comparison below and the claimed record
  // see the identity the warm init got ("auto" in the config, "host-uid" in the record).
  JailSpec spec = requested;
  if (Status st = PinIdentity(to_name, &spec); !st) return fail(st.error());
  if (!warm || warm->name != from_name) {
    return fail(Error(ErrorCode::kNotFound, "warm sandbox " + from_name + " is gone"));
  }
  if (!ProcessRunning(warm->init_pid, warm->init_start_ticks)) {
    return fail(Error(ErrorCode::kNotFound, "warm sandbox " + from_name + " is dead"));
  }
  if (ThreadlessSpecText(warm->spec) != ThreadlessSpecText(spec)) {
    return fail(Error(ErrorCode::kInvalidArgument,
                      "warm sandbox " + from_name +
                          " was made from another spec than the one asked for (the "
                          "configuration changed?)"));
  }
  auto late = LateMounts(warm->spec, spec);
  if (!late) return fail(late.error().WithContext("warm sandbox " + from_name));
  // Under a reserved identity the warm init's user namespace maps the jail's uid to the
  // slot of its placeholder, fixed when it was made; the thread's files are its own
  // slot's. The claimed sandbox keeps the warm ids (its record says so), and the thread's
  // directories are bound with a mapping between the two, so that on disk everything
  // stays the thread's, as a cold create would have left it.
  auto warm_ids = ResolveIdentity(warm->spec);
  auto thread_ids = ResolveIdentity(spec);
  if (!warm_ids) return fail(warm_ids.error());
  if (!thread_ids) return fail(thread_ids.error());
  if (warm_ids->mode != thread_ids->mode) {
    return fail(Error(ErrorCode::kInvalidArgument, "warm sandbox " + from_name + " has the " +
                                                       warm_ids->mode + " identity, the request " +
                                                       thread_ids->mode));
  }
  JailSpec recorded = spec;
  UniqueFd idmap;
  if (thread_ids->uid != warm_ids->uid || thread_ids->gid != warm_ids->gid) {
    auto ns = IdmapUserNamespace(thread_ids->uid, thread_ids->gid, warm_ids->uid, warm_ids->gid);
    if (!ns) return fail(ns.error());
    idmap = std::move(*ns);
    recorded.identity_claimed_key = IdentityKeyOf(warm->spec);
  }
  // The thread's directories with the thread's own ids (`spec`, not `recorded`).
  if (Status st = PrepareHostDirs(spec); !st) return fail(st.error());
  if (Status st = SwitchMounts(*warm, spec, *late, idmap ? idmap.get() : -1); !st) {
    return fail(st.error());
  }

  SandboxRecord claimed = *warm;
  claimed.name = to_name;
  claimed.spec = std::move(recorded);
  claimed.spec.argv = {"corral-init"};  // as CreateSandbox records it
  claimed.idle_timeout_seconds = idle_timeout_seconds;
  if (!late->empty()) {
    // The Landlock rules name the jail's mounts: those of a cold create of this spec.
    auto plan = Plan(claimed.spec);
    if (!plan) return fail(plan.error().WithContext("warm sandbox " + from_name));
    claimed.landlock = plan->landlock;
  }
  if (Status st = store.Rename(from_name, claimed); !st) {
    // A name taken meanwhile is someone else's; any other failure left `to_name` ours.
    renamed =
        st.error().code() != ErrorCode::kAlreadyExists && static_cast<bool>(store.Find(to_name));
    return fail(st.error());
  }
  RemovePlaceholders(WarmDirOf(store, from_name));
  return claimed;
}

}  // namespace corral::runtime
