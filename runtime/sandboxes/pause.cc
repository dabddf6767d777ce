#include "runtime/sandboxes/pause.h"

#include "cgroups/cgroup.h"
#include "runtime/run/jail_cgroup.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/workspace_overlay.h"
#include "runtime/sandboxes/workspace_snapshot.h"

namespace corral::runtime {

namespace {

// The sandbox's own cgroup, as a handle that leaves it alone when destroyed.
Result<std::unique_ptr<cgroups::Cgroup>> SandboxCgroup(const SandboxRecord& record) {
  if (record.cgroup_name.empty()) {
    return Error(ErrorCode::kUnsupported,
                 "sandbox '" + record.name +
                     "' has no cgroup (rootless without a delegated cgroup), and pausing freezes "
                     "the cgroup: it cannot be paused");
  }
  ASSIGN_OR_RETURN(auto manager,
                   cgroups::CgroupManager::Create(ManagerOptionsFor(record.spec.cgroups)));
  ASSIGN_OR_RETURN(auto cg, manager->OpenCgroup(record.cgroup_name));
  cg->Release();
  return cg;
}

Status SetPaused(const std::string& name_or_id, bool paused) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  ASSIGN_OR_RETURN(SandboxRecord record, store.Find(name_or_id));
  ASSIGN_OR_RETURN(UniqueFd turn, store.LockPause(record.name));
  auto info = InspectSandbox(record.name, Inspect::kLiveness);
  if (!info) return info.error();
  if (!info->alive || info->record.id != record.id) {
    return Error(ErrorCode::kNotFound, "sandbox '" + record.name +
                                           "' is dead or was removed; `corral rm " + record.name +
                                           "` cleans up a dead one");
  }
  ASSIGN_OR_RETURN(auto cg, SandboxCgroup(record));
  if (paused) {
    // The marker first: a pause cut short between the two leaves a sandbox that says it is
    // paused (a resume fixes it), never a frozen one taken for a removal cut short.
    RETURN_IF_ERROR(store.SetPaused(record.name, true));
    if (Status st = cg->SetFrozen(true); !st) {
      (void)store.SetPaused(record.name, false);
      return st.error().WithContext("pausing sandbox '" + record.name + "'");
    }
    return Ok();
  }
  // A commit of its workspace that was cut short is finished (or undone) before the sandbox
  // runs again and could touch what it staged.
  RETURN_IF_ERROR(FinishWorkspaceCommit(record.spec));
  if (record.spec.workspace_overlay) RETURN_IF_ERROR(FinishWorkspaceSnapshots(record.name));
  if (Status st = cg->SetFrozen(false); !st) {
    return st.error().WithContext("resuming sandbox '" + record.name + "'");
  }
  return store.SetPaused(record.name, false);
}

}  // namespace

Status PauseSandbox(const std::string& name_or_id) { return SetPaused(name_or_id, true); }
Status ResumeSandbox(const std::string& name_or_id) { return SetPaused(name_or_id, false); }

Status ResumeIfPaused(const std::string& name_or_id) {
  auto store = SandboxStore::Open();
  if (!store) return Ok();
  auto record = store->Find(name_or_id);
  if (!record || !store->PausedSince(record->name)) return Ok();
  return ResumeSandbox(record->name);
}

Status RefuseIfPaused(const SandboxStore& store, const SandboxRecord& record) {
  if (!store.PausedSince(record.name)) return Ok();
  return Error(ErrorCode::kFailedPrecondition, "sandbox '" + record.name +
                                                   "' is paused; `corral resume " + record.name +
                                                   "` first (its processes are frozen until then)");
}

Result<PausedWhile> PausedWhile::For(const SandboxRecord& record) {
  ASSIGN_OR_RETURN(SandboxInfo info, InspectSandbox(record.name, Inspect::kLiveness));
  PausedWhile p;
  p.name_ = record.name;
  p.resume_ = !info.paused_seconds.has_value();
  if (p.resume_) RETURN_IF_ERROR(PauseSandbox(record.name));
  return p;
}

}  // namespace corral::runtime
