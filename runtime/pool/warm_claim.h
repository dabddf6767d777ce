// Warm sandboxes: persistent sandboxes made before anyone asks for them, then claimed for
// a thread. `corral serve`'s warm pool (runtime/pool/warm_pool.h) keeps a few ready, so that
// creating a thread's sandbox costs two mounts and a rename instead of a whole jail.
//
// A warm sandbox is made from a thread's spec with PLACEHOLDER host directories for
// user-data and acp-workspace (<runtime>/warm/<name>/{user-data,acp-workspace}, empty,
// made like PrepareHostDirs makes a thread's), and no idle timeout. Claiming it:
//   1. the thread's real directories are mounted over the placeholders INSIDE the
//      sandbox's mount namespace, with exactly the attributes a cold create gives them
//      (jail::PrepareBindTree: nosuid, nodev, private; acp-workspace read-only), and the
//      request's mounts the warm sandbox lacks (DeerFlow's skills views, say) at their
//      places, their mount points made in the jail's own tmpfs as a cold create makes them;
//      the record then carries the Landlock rules of a cold create of the request. Under
//      a reserved identity the warm init's ids are those of its placeholder's slot (a user
//      namespace's map is written once): the claimed sandbox keeps them (its spec's
//      identity_claimed_key), and the thread's directories are bound id-mapped, the
//      thread's slot on disk shown as the warm one's, so that its files stay the thread's;
//   2. the store record is renamed to the thread's name (SandboxStore::Rename) and carries
//      the thread's spec and idle timeout; its cgroup keeps the warm name ("sbx-<warm>":
//      the record's cgroup_name is its own field), its id and created_at stay;
//   3. the placeholders are removed.
// The result is the sandbox a cold CreateSandbox of (to_name, spec) would have made: the
// same mounts, Landlock rules (they name jail paths), limits and record — `corral
// ps/inspect/exec/rm` cannot tell them apart except by created_at and the cgroup's name.
// Parent side; root only (as every persistent sandbox).
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// <runtime>/warm/<name>: the placeholders of warm sandbox `name`.
std::string WarmDirOf(const SandboxStore& store, const std::string& name);

// Creates the warm sandbox `name` from `spec`, whose user_data_dir and acp_workspace_dir
// are replaced by fresh placeholders. No idle timeout: it waits until claimed or removed.
Result<SandboxRecord> CreateWarmSandbox(const std::string& name, JailSpec spec);

// Removes a warm sandbox (if it still exists) and its placeholders. Idempotent.
Status RemoveWarmSandbox(const std::string& name);

// Turns the warm sandbox `from_name` into `to_name`, serving `spec` (a thread's spec: it
// must equal the one the warm sandbox was made from apart from user_data_dir,
// acp_workspace_dir and mounts the warm one lacks, else kInvalidArgument) with
// `idle_timeout_seconds`. Holds `from_name`'s lock exclusively throughout. On any error
// the warm sandbox is removed (never half-claimed) and `to_name` does not exist, unless
// it existed before (kAlreadyExists). Errors name the path and errno.
Result<SandboxRecord> ClaimWarmSandbox(const std::string& from_name, const std::string& to_name,
                                       const JailSpec& spec, double idle_timeout_seconds);

}  // namespace corral::runtime
