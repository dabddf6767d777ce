// ScopeGuard: runs a callable when the scope ends unless Dismiss()ed. Used for rollback
// of multi-step setup (e.g. remove a cgroup if spawning into it fails).
#pragma once

#include <utility>

namespace corral {

template <typename F>
class ScopeGuard {
 public:
  explicit ScopeGuard(F f) : f_(std::move(f)) {}
  ~ScopeGuard() {
    if (active_) f_();
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

  void Dismiss() { active_ = false; }

 private:
  F f_;
  bool active_ = true;
};

}  // namespace corral
