#include "runtime/pool/warm_pool.h"

#include <spdlog/spdlog.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "runtime/pool/exec_slot_keeper.h"
#include "runtime/pool/warm_claim.h"
#include "runtime/run/identity.h"
#include "runtime/run/planner.h"
#include "runtime/sandboxes/sandbox_store.h"

namespace corral::runtime {
namespace {

std::string WarmName() {
  unsigned char bytes[8] = {};
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    const auto t = std::chrono::steady_clock::now().time_since_epoch().count();
    std::memcpy(bytes, &t, sizeof bytes);
  }
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return std::string(kWarmNamePrefix) + hex;
}

constexpr int kRefillNice = 10;
constexpr std::chrono::milliseconds kRefillDelay(300);

bool Below(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

}  // namespace

WarmPool::WarmPool(int target, JailSpec spec, ExecSlotKeeper* slots)
    : target_(static_cast<size_t>(std::max(0, target))), spec_(std::move(spec)), slots_(slots) {}

WarmPool::~WarmPool() { Stop(); }

std::optional<std::string> WarmPool::WhyNot(const JailSpec& spec) {
  if (spec.network.mode == NetworkMode::kAllowlist) {
    return "network.mode allowlist starts a proxy per sandbox name; creates stay cold";
  }
  for (const auto& m : spec.mounts) {
    if (!m.volume.empty()) return "volume " + m.volume + " is attached by a cold create";
    if (Below(m.container_path, kUserDataPath) || Below(m.container_path, kAcpWorkspacePath)) {
      return "mount " + m.container_path + " lies below a per-thread directory";
    }
  }
  // A reserved identity is served too: the claim binds the thread's directories with an
  // id mapping (runtime/pool/warm_claim.h).
  auto identity = ResolveIdentity(spec);
  if (!identity) return "identity: " + identity.error().message();
  return std::nullopt;
}

std::vector<std::string> WarmPool::RemoveStale(const CgroupSpec& cgroups) {
  std::vector<std::string> lines;
  auto store = SandboxStore::Open();
  if (!store) return lines;
  for (const SandboxRecord& r : store->List()) {
    if (r.name.rfind(kWarmNamePrefix, 0) != 0) continue;
    Status st = RemoveWarmSandbox(r.name);
    lines.push_back("warm sandbox " + r.name + " left by an earlier daemon: " +
                    (st ? "removed" : "removing failed: " + st.error().message()));
  }
  // Placeholders whose sandbox never got recorded (a daemon killed mid-create), and the
  // cgroups that create had made by then (its init died with the daemon).
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(store->root() + "/warm", ec)) {
    const std::string name = e.path().filename();
    if (name.rfind(kWarmNamePrefix, 0) == 0 && !store->Find(name)) {
      if (Status st = RemoveUnrecordedCgroups(name, cgroups); !st) {
        lines.push_back("cgroups of warm sandbox " + name +
                        " (never recorded): removing failed: " + st.error().message());
      }
      std::filesystem::remove_all(e.path(), ec);
    }
  }
  return lines;
}

void WarmPool::Start() {
  if (target_ == 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { Refill(); });
}

std::optional<WarmSandbox> WarmPool::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_.empty() || stopping_) return std::nullopt;
  WarmSandbox w = std::move(ready_.front());
  ready_.pop_front();
  ++counts_.taken;
  last_take_ = std::chrono::steady_clock::now();
  cv_.notify_all();
  return w;
}

void WarmPool::Refill() {
  using Clock = std::chrono::steady_clock;
  // Below the I/O threads and the creates: a refill is for the NEXT create and must not
  // slow down the one that just took a sandbox (its first commands follow at once). The
  // inits made here inherit the nice value; they only wait and reap orphans.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kRefillNice);
  std::chrono::seconds backoff(1);
  Clock::time_point retry_at{};
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (ready_.size() >= target_) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      continue;
    }
    if (Clock::now() < retry_at) {
      cv_.wait_until(lock, retry_at);
      continue;
    }
    // Right after a take, while some are still ready, let that create and its first
    // calls finish first; an empty pool is refilled at once.
    const Clock::time_point settled = last_take_ + kRefillDelay;
    if (!ready_.empty() && Clock::now() < settled) {
      cv_.wait_until(lock, settled);
      continue;
    }
    lock.unlock();
    ReapRemoved(false);
    const std::string name = WarmName();
    auto record = CreateWarmSandbox(name, spec_);
    lock.lock();
    if (!record) {
      ++counts_.failed;
      spdlog::warn("warm pool: creating {}: {}; retrying in {} s", name, record.error().message(),
                   backoff.count());
      retry_at = Clock::now() + backoff;
      backoff = std::min(backoff * 2, std::chrono::seconds(60));
      continue;
    }
    backoff = std::chrono::seconds(1);
    ++counts_.made;
    ready_.push_back({name, record->init_pid});
    if (slots_ != nullptr) slots_->Request(name);
  }
}

void WarmPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::deque<WarmSandbox> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(ready_);
  }
  for (const WarmSandbox& w : left) {
    if (slots_ != nullptr) slots_->Drop(w.name);
    if (Status st = RemoveWarmSandbox(w.name); !st) {
      spdlog::warn("warm pool: removing {}: {}", w.name, st.error().message());
    }
    std::lock_guard<std::mutex> lock(mu_);
    removed_.push_back(w.init_pid);
  }
  ReapRemoved(true);
}

void WarmPool::ReapRemoved(bool wait) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int round = 0; round < (wait ? 200 : 1) && !removed_.empty(); ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::erase_if(removed_, [](pid_t pid) {
      int status;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      return r == pid || (r < 0 && errno == ECHILD);
    });
  }
}

WarmCounts WarmPool::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  WarmCounts c = counts_;
  c.ready = ready_.size();
  return c;
}

}  // namespace corral::runtime
