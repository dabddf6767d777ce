// runtime::SandboxProvider: hands out one Sandbox per (user, thread), as DeerFlow's
// SandboxProvider does (docs/deerflow-contract.md). Acquire may create things
// (thread directories, a jail); Get is an in-memory lookup that never blocks on I/O;
// Release marks a sandbox unused (it stays warm); Shutdown drops everything this
// provider holds.
//
// ProviderBase implements the bookkeeping shared by all providers: the in-memory map,
// LRU order, a soft cap on live entries (only released entries are evicted), an idle
// timeout, and "concurrent Acquire of one thread yields one sandbox" (one mutex around
// acquire; creating a thread's sandbox takes milliseconds). A provider adds Create()
// and Destroy(). An `aio` provider (HTTP client of an AIO server) is one more subclass.
// Thread-safe.
#pragma once

#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "runtime/spec/provider_config.h"
#include "tools/providers/sandbox.h"
#include "tools/providers/thread_dirs.h"

namespace corral::runtime {

class SandboxProvider {
 public:
  virtual ~SandboxProvider() = default;

  // Returns the sandbox id of (user, thread), creating the sandbox on first use.
  // Ids are validated (kInvalidArgument).
  virtual Result<std::string> Acquire(const std::string& thread_id, const std::string& user_id) = 0;
  // nullptr when `id` is unknown to this provider. Refreshes its last use.
  virtual std::shared_ptr<Sandbox> Get(const std::string& id) = 0;
  virtual void Release(const std::string& id) = 0;
  virtual void Shutdown() = 0;
  // DeerFlow's flag: the host's thread directories are what the sandbox sees.
  virtual bool uses_thread_data_mounts() const { return true; }
  const ProviderConfig& config() const { return config_; }

 protected:
  explicit SandboxProvider(ProviderConfig config) : config_(std::move(config)) {}
  ProviderConfig config_;
};

class ProviderBase : public SandboxProvider {
 public:
  Result<std::string> Acquire(const std::string& thread_id, const std::string& user_id) override;
  std::shared_ptr<Sandbox> Get(const std::string& id) override;
  void Release(const std::string& id) override;
  void Shutdown() override;

  size_t size() const;  // entries held in memory (tests)

 protected:
  ProviderBase(ProviderConfig config, size_t max_entries)
      : SandboxProvider(std::move(config)), max_entries_(max_entries) {}
  // The sandbox id of a validated thread.
  virtual std::string IdFor(const ThreadDirs& dirs) const = 0;
  // Makes (or finds again) the sandbox of a validated thread. Called with the lock held.
  virtual Result<std::shared_ptr<Sandbox>> Create(const ThreadDirs& dirs) = 0;
  // Whether a held sandbox still works (a jail's init may have died or idled out).
  virtual bool Alive(Sandbox& sandbox) {
    (void)sandbox;
    return true;
  }
  // Frees what Create made when an entry is evicted, idles out or at Shutdown.
  virtual void Destroy(Sandbox& sandbox) { (void)sandbox; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::shared_ptr<Sandbox> sandbox;
    Clock::time_point last_used;
    bool active = false;
    std::list<std::string>::iterator lru;  // position in lru_ (front = most recent)
  };
  void Touch(Entry& e, const std::string& id);
  void EvictLocked(std::map<std::string, Entry>::iterator it);
  void ReapIdleLocked();

  const size_t max_entries_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;
};

}  // namespace corral::runtime
