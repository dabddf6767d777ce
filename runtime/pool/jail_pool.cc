#include "runtime/pool/jail_pool.h"

#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "base/scope_guard.h"
#include "jail/command.h"
#include "runtime/run/jail_spawner.h"
#include "runtime/run/planner.h"
#include "runtime/run/root_layout.h"
#include "runtime/spec/config.h"
#include "runtime/spec/spec_json.h"

namespace corral::runtime {

namespace {

// The spec with what a prepared jail learns late (RunPrepared) cleared: the same fields
// RunPrepared validates per run (ValidateLateFields, runtime/spec/config.h). Everything
// else must be equal — in particular `network` (mode, allow, deny, caps) and
// `unsafe.network_resolve`: a pooled jail's proxy was started with the pool's policy, so a
// run with any other policy (even the same rules in another order) is not served here.
JailSpec WithoutLateFields(JailSpec spec) {
  spec.argv.clear();
  spec.env.clear();
  spec.workdir.reset();
  spec.limits.timeout_seconds = 0;
  spec.limits.output_limit_bytes = 0;
  spec.python = {};  // `corral code run`'s policy: applied in the jail, not part of it
  return spec;
}

}  // namespace

Result<std::unique_ptr<JailPool>> JailPool::Create(const JailSpec& base, size_t size) {
  if (size == 0) return Error(ErrorCode::kInvalidArgument, "jail pool: size must be at least 1");
  for (const MountSpec& m : base.mounts) {
    // Prepared jails would mount it ahead of any run, outside the volume's count of users.
    if (!m.volume.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "volume " + m.volume +
                       ": a pool's prepared jails mount no volumes; a run with --volume runs cold");
    }
  }
  JailSpec checked = base;
  if (checked.argv.empty()) checked.argv = {"/bin/true"};  // the pool's spec has no command
  ASSIGN_OR_RETURN(JailBlueprint blueprint, MakeBlueprint(checked));
  std::unique_ptr<JailPool> pool(new JailPool(std::move(blueprint), size));
  ASSIGN_OR_RETURN(pool->mount_points_, MountPointsOf(checked));
  // Before the refill thread exists: the spawner is a fork of this thread.
  ASSIGN_OR_RETURN(pool->spawner_, JailSpawner::Start(pool->blueprint_));
  // Every signal blocked in the refill thread: a SIGINT meant for a supervisor's signalfd
  // must not land there.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pool->refill_ = std::jthread([p = pool.get()](std::stop_token stop) { p->RefillLoop(stop); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return pool;
}

JailPool::JailPool(JailBlueprint blueprint, size_t size)
    : blueprint_(std::move(blueprint)),
      base_key_(WithoutLateFields(blueprint_.spec)),
      size_(size) {}

JailPool::~JailPool() {
  refill_.request_stop();
  changed_.notify_all();
  if (refill_.joinable()) refill_.join();
}

bool JailPool::Fits(const JailSpec& spec) const { return !Unfit(spec); }

std::optional<std::string> JailPool::Unfit(const JailSpec& spec) const {
  JailSpec key = WithoutLateFields(spec);
  if (!(key == base_key_)) {
    std::string where;
    for (const auto& op : nlohmann::json::diff(nlohmann::json::parse(SpecToJson(base_key_)),
                                               nlohmann::json::parse(SpecToJson(key)))) {
      if (!where.empty()) where += ", ";
      where += op.value("path", "?");
    }
    if (where.empty()) where = "a field its JSON form does not show";
    return "differs from the pool's spec at " + where;
  }
  if (spec.workdir && *spec.workdir != "/" && !PathInsideAMount(mount_points_, *spec.workdir)) {
    return "the working directory " + *spec.workdir +
           " lies outside the prepared jails' mounts (a cold run gives it a tmpfs of its own)";
  }
  if (auto encoded = jail::EncodeCommand(CommandFor(spec)); !encoded) {
    return encoded.error().message();
  }
  return std::nullopt;
}

void JailPool::RefillLoop(std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop.stop_requested()) {
    // Refilling waits while a command runs: on a small host, building the next jail
    // (cgroup mkdirs under cgroup_mutex, namespace creation, mounts) would compete with the
    // running command's exec and teardown for CPU and kernel locks, and that is the
    // latency the pool exists to cut.
    if (ready_.size() >= size_ || running_ > 0) {
      changed_.wait(lock, stop, [&] { return ready_.size() < size_ && running_ == 0; });
      continue;
    }
    lock.unlock();
    auto jail = PrepareJail(blueprint_, spawner_.get());
    lock.lock();
    if (jail) {
      ready_.push_back(std::move(*jail));
      last_error_.reset();
    } else {
      last_error_ = jail.error();
      // Back off, so that a host that cannot build jails is not spun on.
      changed_.wait_for(lock, stop, std::chrono::milliseconds(200), [] { return false; });
    }
    changed_.notify_all();
  }
}

Status JailPool::WaitUntilFull() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return ready_.size() >= size_ || last_error_.has_value(); });
  if (ready_.size() < size_ && last_error_) return *last_error_;
  return Ok();
}

Result<RunOutcome> JailPool::Run(const JailSpec& spec, const RunOptions& options) {
  // Checked before a jail is taken: RunPrepared consumes the jail it is given.
  if (Unfit(spec)) return RunJail(spec, options);
  return RunFitting(spec, options);
}

Result<RunOutcome> JailPool::RunFitting(const JailSpec& spec, const RunOptions& options) {
  std::optional<PreparedJail> jail;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++running_;
    if (!ready_.empty()) {
      jail.emplace(std::move(ready_.front()));
      ready_.pop_front();
    }
  }
  ScopeGuard done([&] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    changed_.notify_all();
  });
  if (!jail) {
    ASSIGN_OR_RETURN(PreparedJail fresh, PrepareJail(blueprint_, spawner_.get()));
    jail.emplace(std::move(fresh));
  }
  return RunPrepared(std::move(*jail), spec, options);
}

}  // namespace corral::runtime
