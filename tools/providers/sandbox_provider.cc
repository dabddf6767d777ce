#include "tools/providers/sandbox_provider.h"

namespace corral::runtime {

void ProviderBase::Touch(Entry& e, const std::string& id) {
  e.last_used = Clock::now();
  lru_.erase(e.lru);
  lru_.push_front(id);
  e.lru = lru_.begin();
}

void ProviderBase::EvictLocked(std::map<std::string, Entry>::iterator it) {
  Destroy(*it->second.sandbox);
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

void ProviderBase::ReapIdleLocked() {
  if (config_.idle_timeout <= 0) return;
  auto limit = std::chrono::duration<double>(config_.idle_timeout);
  auto now = Clock::now();
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (now - it->second.last_used > limit) EvictLocked(it);
    it = next;
  }
}

Result<std::string> ProviderBase::Acquire(const std::string& thread_id,
                                          const std::string& user_id) {
  ASSIGN_OR_RETURN(ThreadDirs dirs, ThreadDirsFor(config_.base_dir, user_id, thread_id));
  std::lock_guard<std::mutex> lock(mu_);
  ReapIdleLocked();
  RETURN_IF_ERROR(EnsureThreadDirs(dirs));
  const std::string id = IdFor(dirs);
  auto it = entries_.find(id);
  if (it != entries_.end() && !Alive(*it->second.sandbox)) {
    EvictLocked(it);
    it = entries_.end();
  }
  if (it == entries_.end()) {
    ASSIGN_OR_RETURN(std::shared_ptr<Sandbox> fresh, Create(dirs));
    // Soft cap: evict the least recently used released entry; active ones stay.
    if (entries_.size() >= max_entries_) {
      for (auto r = lru_.rbegin(); r != lru_.rend(); ++r) {
        auto victim = entries_.find(*r);
        if (!victim->second.active) {
          EvictLocked(victim);
          break;
        }
      }
    }
    lru_.push_front(id);
    it = entries_.emplace(id, Entry{fresh, Clock::now(), false, lru_.begin()}).first;
  }
  it->second.active = true;
  Touch(it->second, id);
  return id;
}

std::shared_ptr<Sandbox> ProviderBase::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return nullptr;
  Touch(it->second, id);
  return it->second.sandbox;
}

void ProviderBase::Release(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.active = false;
}

void ProviderBase::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!entries_.empty()) EvictLocked(entries_.begin());
}

size_t ProviderBase::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace corral::runtime
