// Pause and resume of a persistent sandbox (`corral pause/resume`, corral's API, the
// daemon's idle policy): its cgroup frozen, so that every process in it (the init, the
// execs running, their background processes) stops where it is and uses no CPU, while its
// memory, open files, sockets and files stay as they are. A resume thaws them.
//
// The freeze is the cgroup's (v2 cgroup.freeze, v1 freezer.state), so it needs the
// sandbox to have a cgroup: a rootless sandbox without one cannot be paused. The marker
// in the store (SandboxStore::PausedSince) tells a pause from a removal cut short, which
// also leaves a frozen cgroup. An exec into a paused sandbox is refused (ErrPaused) unless
// the caller resumes it first, as the daemon does. Parent side.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/sandboxes/sandbox_store.h"

namespace corral::runtime {

// Both are idempotent: pausing a paused sandbox (or resuming a running one) is Ok.
// Errors: no such sandbox, a dead one, one without a cgroup, a freeze that did not
// complete (then nothing stays frozen).
Status PauseSandbox(const std::string& name_or_id);
Status ResumeSandbox(const std::string& name_or_id);

// Resumes the sandbox if it is paused; Ok when it is not (or does not exist: the call
// that follows says so). What a caller that must never see "paused" runs first.
Status ResumeIfPaused(const std::string& name_or_id);

// kFailedPrecondition naming the sandbox and the way out, when `record`'s sandbox is
// paused; Ok otherwise. For the exec paths, which must not hang in a frozen cgroup.
Status RefuseIfPaused(const SandboxStore& store, const SandboxRecord& record);

// The sandbox paused for as long as this lives, unless it was paused already (then it
// stays so): what a commit, a discard and a snapshot hold so that the sandbox reads one
// state and writes nothing meanwhile.
class PausedWhile {
 public:
  static Result<PausedWhile> For(const SandboxRecord& record);
  PausedWhile(PausedWhile&& o) noexcept : name_(std::move(o.name_)), resume_(o.resume_) {
    o.resume_ = false;
  }
  PausedWhile& operator=(PausedWhile&&) = delete;
  ~PausedWhile() {
    if (resume_) (void)ResumeSandbox(name_);
  }

 private:
  PausedWhile() = default;
  std::string name_;
  bool resume_ = false;
};

}  // namespace corral::runtime
