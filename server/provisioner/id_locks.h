// Mutual exclusion per key: callers that name the same key take turns, callers with
// different keys proceed at once. SandboxManager uses it per sandbox_id, so that creates
// of different sandboxes overlap (on cgroup v1 most of a create is a wait for an RCU grace
// period in the cgroup attach, which concurrent creates share) while one id's create,
// delete and reap stay one at a time. Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace corral::server {

class IdLocks {
 public:
  // Holds one key until destroyed. Move-only.
  class Guard {
   public:
    Guard(Guard&& other) noexcept
        : locks_(std::exchange(other.locks_, nullptr)), key_(std::move(other.key_)) {}
    Guard& operator=(Guard&&) = delete;
    Guard(const Guard&) = delete;
    ~Guard() {
      if (locks_ != nullptr) locks_->Unlock(key_);
    }

   private:
    friend class IdLocks;
    Guard(IdLocks* locks, std::string key) : locks_(locks), key_(std::move(key)) {}
    IdLocks* locks_;
    std::string key_;
  };

  // Waits until nobody holds `key`, then holds it.
  Guard Lock(const std::string& key) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return held_.count(key) == 0; });
    held_.insert(key);
    return Guard(this, key);
  }

  // Holds `key` if nobody does; nullopt otherwise (never waits).
  std::optional<Guard> TryLock(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_.insert(key).second) return std::nullopt;
    return Guard(this, key);
  }

 private:
  void Unlock(const std::string& key) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.erase(key);
    }
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> held_;
};

}  // namespace corral::server
