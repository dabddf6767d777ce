#include "runtime/pool/exec_slot_keeper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

namespace corral::runtime {
namespace {

// A slot whose process has exited (its sandbox was removed, or it was killed) is useless.
bool Exited(const ExecSlot& slot) {
  pollfd exited{slot.process.pidfd(), POLLIN, 0};
  return ::poll(&exited, 1, 0) != 0;
}

}  // namespace

ExecSlotKeeper::ExecSlotKeeper(ExecSlotKeeperOptions options)
    : options_(options), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  // The thread takes no signal: the caller's signal handling (a signalfd, sigwait) stays
  // where it is, and the slots it spawns start from a known mask.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

ExecSlotKeeper::~ExecSlotKeeper() {
  thread_.request_stop();
  Wake();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  ready_.clear();  // kills the waiting slots, removes their cgroups
}

std::map<std::string, ExecSlotKeeper::Ready>::iterator ExecSlotKeeper::FindReady(
    const std::string& name_or_id) {
  return std::find_if(ready_.begin(), ready_.end(), [&](const auto& entry) {
    return entry.first == name_or_id || entry.second.slot->record.name == name_or_id;
  });
}

std::unique_ptr<ExecSlot> ExecSlotKeeper::Take(const std::string& name_or_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = FindReady(name_or_id);
  if (it == ready_.end()) return nullptr;
  std::unique_ptr<ExecSlot> slot = std::move(it->second.slot);
  ready_.erase(it);
  ++counts_.taken;
  return slot;
}

void ExecSlotKeeper::Request(const std::string& name_or_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (options_.max_slots == 0 || FindReady(name_or_id) != ready_.end() ||
        std::find(queue_.begin(), queue_.end(), name_or_id) != queue_.end()) {
      return;
    }
    if (queue_.size() >= options_.max_slots) queue_.pop_front();
    queue_.push_back(name_or_id);
  }
  Wake();
}

void ExecSlotKeeper::Wake() {
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
}

void ExecSlotKeeper::Update(const SandboxRecord& record) {
  std::unique_ptr<ExecSlot> stale;  // destroyed outside the lock: it kills and reaps
  std::lock_guard<std::mutex> lock(mu_);
  // Applied if the slot being made is this sandbox's.
  if (started_ != finished_) update_while_busy_ = record;
  auto it = ready_.find(record.id);
  if (it == ready_.end()) return;
  // A claim that bound more mounts changed the Landlock rules: the slot's process was
  // made with the old ones and cannot take others, so it goes.
  if (it->second.slot->plan.landlock != record.landlock) {
    stale = std::move(it->second.slot);
    ready_.erase(it);
    ++counts_.evicted;
    return;
  }
  // Same id: same init and cgroup. ExecInSlot still checks the init against the pidfd
  // the slot opened, so a record that named another init would only make it unusable.
  it->second.slot->record = record;
}

void ExecSlotKeeper::Drop(const std::string& name_or_id) {
  std::unique_ptr<ExecSlot> dropped;  // destroyed outside the lock: it kills and reaps
  {
    std::unique_lock<std::mutex> lock(mu_);
    std::erase(queue_, name_or_id);
    const uint64_t under_way = started_;
    finished_cv_.wait(lock, [&] { return finished_ >= under_way; });
    auto it = FindReady(name_or_id);
    if (it == ready_.end()) return;
    dropped = std::move(it->second.slot);
    ready_.erase(it);
  }
}

void ExecSlotKeeper::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && started_ == finished_; });
}

ExecSlotKeeper::Counts ExecSlotKeeper::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c = counts_;
  c.ready = ready_.size();
  return c;
}

void ExecSlotKeeper::DropExited(std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<ExecSlot>> exited;
  for (auto it = ready_.begin(); it != ready_.end();) {
    if (!Exited(*it->second.slot)) {
      ++it;
      continue;
    }
    exited.push_back(std::move(it->second.slot));
    it = ready_.erase(it);
  }
  if (exited.empty()) return;
  lock.unlock();
  exited.clear();  // reaps them, outside the lock
  lock.lock();
}

// The slots' pidfds are duplicated for the wait: Take() may hand a slot out (and its owner
// close the pidfd) while this thread polls.
void ExecSlotKeeper::WaitForWork(std::unique_lock<std::mutex>& lock) {
  std::vector<UniqueFd> watched;
  std::vector<pollfd> fds{{wake_.get(), POLLIN, 0}};
  for (const auto& [id, ready] : ready_) {
    UniqueFd dup(::fcntl(ready.slot->process.pidfd(), F_DUPFD_CLOEXEC, 0));
    if (!dup.valid()) continue;
    fds.push_back({dup.get(), POLLIN, 0});
    watched.push_back(std::move(dup));
  }
  lock.unlock();
  while (::poll(fds.data(), fds.size(), -1) < 0 && errno == EINTR) {
  }
  uint64_t count;
  (void)!::read(wake_.get(), &count, sizeof count);
  lock.lock();
}

// One thread does all the work, woken through wake_ (a request, the stop) or by the exit
// of a ready slot's process. A slot's process exits when its sandbox is removed (by this
// process or by `corral rm` from outside): it is reaped at once, since a zombie in the
// sandbox's PID namespace would keep the sandbox's init from finishing its own exit.
void ExecSlotKeeper::Loop(std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop.stop_requested()) {
    DropExited(lock);
    if (queue_.empty()) {
      idle_.notify_all();
      WaitForWork(lock);
      continue;
    }
    std::string wanted = std::move(queue_.front());
    queue_.pop_front();
    // Slots that leave the keeper here are destroyed outside the lock: that kills and reaps.
    std::vector<std::unique_ptr<ExecSlot>> unwanted;
    if (FindReady(wanted) == ready_.end()) {
      const uint64_t made = ++started_;
      lock.unlock();
      auto slot = PrepareExecSlot(wanted, options_.slot);
      lock.lock();
      std::optional<SandboxRecord> update = std::exchange(update_while_busy_, std::nullopt);
      if (!slot) {
        ++counts_.failed;
        spdlog::debug("exec slot for sandbox {}: {}", wanted, slot.error().message());
      } else if (ready_.count((*slot)->record.id) != 0 ||
                 (update && update->id == (*slot)->record.id &&
                  update->landlock != (*slot)->plan.landlock)) {
        unwanted.push_back(std::move(*slot));  // a duplicate, or made with old rules
      } else {
        if (update && update->id == (*slot)->record.id) (*slot)->record = *update;
        if (ready_.size() >= options_.max_slots) {
          auto oldest = std::min_element(
              ready_.begin(), ready_.end(),
              [](const auto& a, const auto& b) { return a.second.made < b.second.made; });
          unwanted.push_back(std::move(oldest->second.slot));
          ready_.erase(oldest);
          ++counts_.evicted;
        }
        ++counts_.prepared;
        const std::string id = (*slot)->record.id;
        ready_[id] = Ready{std::move(*slot), made};
      }
      ++finished_;
      finished_cv_.notify_all();
    }
    lock.unlock();
    unwanted.clear();
    lock.lock();
  }
  idle_.notify_all();
}

}  // namespace corral::runtime
