// The runtime directory and the content keys of what corral caches in it. Parent side.
//
// <runtime dir> is $CORRAL_RUNTIME_DIR when set to an absolute path, else /run/corral for
// root and $XDG_RUNTIME_DIR/corral (or /run/user/<uid>/corral) for anyone else;
// owner-only, like everything in it (sandboxes/, seccomp-cache/, etc/, tool-locks/).
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace corral::runtime {

std::string RuntimeDir();
// RuntimeDir(), or for a non-root caller with neither CORRAL_RUNTIME_DIR nor
// XDG_RUNTIME_DIR set and no /run/user/<uid> of its own, an error saying how to set one
// (the state of persistent sandboxes must not go somewhere another user could write).
Result<std::string> UsableRuntimeDir();

// The state directory: what outlives a reboot (volumes, workspace overlays).
// $CORRAL_STATE_DIR when set (absolute), else /var/lib/corral for root and
// $XDG_STATE_HOME/corral (or ~/.local/state/corral) for anyone else; an error when none
// can be told (a relative CORRAL_STATE_DIR, a non-root caller without HOME).
Result<std::string> StateDir();

// FNV-1a: stable across builds and processes, unlike std::hash. Cache keys only: only
// the directory's owner (root, or the rootless caller) can write it, so only the owner
// could engineer a collision, against itself.
inline constexpr uint64_t kFnv1aSeed = 1469598103934665603ULL;
inline uint64_t Fnv1a(const std::string& text, uint64_t h = kFnv1aSeed) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace corral::runtime
