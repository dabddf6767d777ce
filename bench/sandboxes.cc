#include "bench/sandboxes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/tree_at.h"
#include "bench/launcher.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/snapshot_store.h"
#include "runtime/sandboxes/workspace_overlay.h"
#include "runtime/spec/workspace_layers.h"
#include "runtime/volumes/sandbox_fork.h"

namespace corral::bench {
namespace {

using Clock = std::chrono::steady_clock;

// At most this many `corral create` in flight: beyond it a 2-core host only queues them,
// and thousands of simultaneous processes would measure the scheduler, not corral.
constexpr int kMaxInFlight = 64;
// The pause figure: a sandbox with this many processes, paused and resumed this often.
constexpr int kPauseProcesses = 20;
constexpr int kPauseRounds = 30;
// The diff figure: a workspace overlay into which the sandbox wrote this many new files,
// 100 MiB in all, diffed this often.
constexpr int kDiffFiles = 1000;
constexpr int64_t kDiffFileBytes = (100 << 20) / kDiffFiles;
constexpr int kForkRounds = 5;
constexpr int kDiffRounds = 10;

}  // namespace

std::optional<int64_t> ReadKbField(const std::string& path, const std::string& field) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) == 0) {
      try {
        return std::stoll(line.substr(field.size())) * 1024;
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

// MemAvailable moves with page cache and other tenants; the median of a few reads a
// moment apart is steadier than one.
std::optional<int64_t> SettledMemAvailable() {
  std::vector<int64_t> v;
  for (int i = 0; i < 5; ++i) {
    if (auto m = ReadMemAvailableBytes()) v.push_back(*m);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::optional<int64_t> ReadPssBytes(int pid) {
  return ReadKbField("/proc/" + std::to_string(pid) + "/smaps_rollup", "Pss:");
}

std::optional<int64_t> ReadMemAvailableBytes() {
  return ReadKbField("/proc/meminfo", "MemAvailable:");
}

namespace {

std::string FirstUp(const std::string& prefix, const std::vector<bool>& up) {
  for (size_t i = 0; i < up.size(); ++i) {
    if (up[i]) return prefix + std::to_string(i);
  }
  return "";
}

// Pause and resume of `name` with kPauseProcesses processes in it (its init and background
// sleeps), timed round by round as the CLI and the daemon run them.
void MeasurePause(const std::string& corral_exe, const std::string& name, Progress& progress,
                  SandboxFigures* f) {
  progress.Update("sandboxes: pause and resume");
  const std::string sleeps = "for i in $(seq " + std::to_string(kPauseProcesses - 1) +
                             "); do nohup sleep 600 >/dev/null 2>&1 & done";
  if (Status s = SpawnAndWait({corral_exe, "exec", name, "--", "sh", "-c", sleeps}); !s) {
    f->reason = "pause: starting the processes failed: " + s.error().message();
    return;
  }
  for (int round = 0; round < kPauseRounds; ++round) {
    auto t0 = Clock::now();
    Status paused = runtime::PauseSandbox(name);
    auto t1 = Clock::now();
    Status resumed = runtime::ResumeSandbox(name);
    auto t2 = Clock::now();
    if (!paused || !resumed) {
      f->reason = "pause: " + (paused ? resumed : paused).error().message();
      return;
    }
    f->pause_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    f->resume_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
}

// Forks of sandbox `parent` (its workspace overlay holding kDiffFiles files), each timed
// from the call to the new sandbox's record, and the state directory's disk use before and
// after each. The forks, then their snapshots, are removed after.
void MeasureFork(const std::string& parent, Progress& progress, SandboxFigures* f) {
  progress.Update("sandboxes: fork of a workspace overlay");
  auto state = runtime::StateDir();
  if (!state) {
    f->fork_reason = state.error().message();
    return;
  }
  auto state_bytes = [&] {
    UniqueFd fd(::open(state->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return fd ? UsageAt(fd.get()).bytes : int64_t{0};
  };
  std::vector<std::string> forks, tags;
  int64_t most = 0;
  for (int round = 0; round < kForkRounds; ++round) {
    runtime::CreateRequest request;
    request.name = parent + "-f" + std::to_string(round);
    const int64_t before = state_bytes();
    const auto t0 = Clock::now();
    auto fork = runtime::ForkSandbox(parent, request);
    const auto t1 = Clock::now();
    if (!fork) {
      f->fork_reason = "fork: " + fork.error().message();
      f->fork_ms.clear();
      break;
    }
    most = std::max(most, state_bytes() - before);
    forks.push_back(fork->sandbox.name);
    tags.insert(tags.begin(), fork->snapshot.tag);  // the newest stands on the older ones
    f->fork_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (!f->fork_ms.empty()) f->fork_extra_bytes = most;
  for (const std::string& name : forks) (void)runtime::RemoveSandbox(name);
  (void)runtime::RemoveSandbox(parent);  // it stands on every snapshot
  for (const std::string& tag : tags) (void)runtime::RemoveSnapshot(tag);
}

// `corral diff` of a sandbox created with --workspace-overlay after it wrote kDiffFiles new
// files into its workspace: the upper layer walked against the (empty) host directory.
void MeasureDiff(const std::string& corral_exe, const std::string& prefix, Progress& progress,
                 SandboxFigures* f) {
  if (::geteuid() != 0) {
    f->diff_reason = "a workspace overlay needs root";
    return;
  }
  progress.Update("sandboxes: diff of a workspace overlay");
  char dir[] = "/tmp/corral-bench-diff-XXXXXX";
  if (::mkdtemp(dir) == nullptr || ::chmod(dir, 0755) != 0) {
    f->diff_reason = "a temporary user-data directory: " + std::string(std::strerror(errno));
    return;
  }
  const std::string name = prefix + "diff";
  auto cleanup = [&] {
    (void)runtime::RemoveSandbox(name);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  const std::string fill = "cd /mnt/user-data/workspace && for i in $(seq " +
                           std::to_string(kDiffFiles) + "); do head -c " +
                           std::to_string(kDiffFileBytes) + " /dev/zero > f$i; done";
  Status made = SpawnAndWait(
      {corral_exe, "create", "--name", name, "--user-data", dir, "--workspace-overlay"});
  if (made) made = SpawnAndWait({corral_exe, "exec", name, "--", "sh", "-c", fill});
  if (!made) {
    f->diff_reason = "making its workspace failed: " + made.error().message();
    cleanup();
    return;
  }
  for (int round = 0; round < kDiffRounds; ++round) {
    const auto t0 = Clock::now();
    auto changes = runtime::DiffWorkspace(name);
    const auto t1 = Clock::now();
    if (!changes || changes->size() != static_cast<size_t>(kDiffFiles)) {
      f->diff_reason = changes ? "diff listed " + std::to_string(changes->size()) +
                                     " changes, not " + std::to_string(kDiffFiles)
                               : "diff: " + changes.error().message();
      f->diff_ms.clear();
      break;
    }
    f->diff_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (auto info = runtime::InspectSandbox(name, runtime::Inspect::kLiveness)) {
    const std::string upper = runtime::WorkspaceUpperDir(info->record.spec);
    UniqueFd dir_fd(::open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd) f->diff_upper_bytes = UsageAt(dir_fd.get()).bytes;
  }
  MeasureFork(name, progress, f);
  cleanup();
}

}  // namespace

SandboxFigures MeasureSandboxes(const std::string& corral_exe, int count, Progress& progress) {
  SandboxFigures f;
  f.requested = count;
  f.concurrency = std::min(count, kMaxInFlight);
  const std::string prefix = "corral-bench-" + std::to_string(getpid()) + "-";
  progress.Update("sandboxes: settling memory");
  const auto before = SettledMemAvailable();

  std::atomic<int> next{0}, created{0};
  std::mutex mu;
  std::string first_error;
  std::vector<bool> up(static_cast<size_t>(count), false);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < f.concurrency; ++t) {
    threads.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < count;) {
        Status s = SpawnAndWait({corral_exe, "create", "--name", prefix + std::to_string(i)});
        std::lock_guard<std::mutex> lock(mu);
        if (s) {
          up[static_cast<size_t>(i)] = true;
          created.fetch_add(1);
        } else if (first_error.empty()) {
          first_error = s.error().message();
        }
      }
    });
  }
  while (next.load() < count) {
    progress.Update("sandboxes: creating " + std::to_string(created.load()) + "/" +
                    std::to_string(count));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : threads) t.join();
  f.bring_up_s = std::chrono::duration<double>(Clock::now() - t0).count();
  f.created = created.load();

  progress.Update("sandboxes: measuring idle memory");
  const auto after = SettledMemAvailable();
  int64_t cgroup_sum = 0, pss_sum = 0;
  int cgroup_n = 0, pss_n = 0;
  for (int i = 0; i < count; ++i) {
    if (!up[static_cast<size_t>(i)]) continue;
    auto info = runtime::InspectSandbox(prefix + std::to_string(i));
    if (!info) continue;
    if (info->stats && info->stats->memory_current_bytes) {
      cgroup_sum += *info->stats->memory_current_bytes;
      ++cgroup_n;
    }
    if (auto pss = ReadPssBytes(info->record.init_pid)) {
      pss_sum += *pss;
      ++pss_n;
    }
  }
  if (f.created > 0 && before && after)
    f.mem_available_per_sandbox_bytes = static_cast<double>(*before - *after) / f.created;
  if (cgroup_n > 0) f.cgroup_memory_per_sandbox_bytes = static_cast<double>(cgroup_sum) / cgroup_n;
  if (pss_n > 0) f.init_pss_per_sandbox_bytes = static_cast<double>(pss_sum) / pss_n;

  if (f.created > 0) MeasurePause(corral_exe, FirstUp(prefix, up), progress, &f);
  MeasureDiff(corral_exe, prefix, progress, &f);

  progress.Update("sandboxes: removing");
  const auto r0 = Clock::now();
  for (int i = 0; i < count; ++i) {
    if (!up[static_cast<size_t>(i)]) continue;
    Status s = runtime::RemoveSandbox(prefix + std::to_string(i));
    if (!s && first_error.empty()) first_error = "rm: " + s.error().message();
  }
  f.remove_s = std::chrono::duration<double>(Clock::now() - r0).count();
  if (f.created == count) {
    f.status = EntryStatus::kOk;
  } else {
    f.status = f.created > 0 ? EntryStatus::kOk : EntryStatus::kFailed;
    f.reason = std::to_string(count - f.created) + " of " + std::to_string(count) +
               " creates failed: " + first_error;
  }
  if (!first_error.empty() && f.reason.empty()) f.reason = first_error;
  return f;
}

}  // namespace corral::bench
