#include "server/provisioner/sandbox_manager.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "base/parallel_for.h"
#include "base/unique_fd.h"
#include "runtime/pool/warm_claim.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/remove_many.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "server/http/auth.h"
#include "tools/providers/jail_sandbox.h"
#include "tools/providers/thread_dirs.h"

namespace corral::server {
namespace {

// How long a delete waits for what the sandbox's teardown has already killed: its init to
// exit, its shell sessions' threads to end. Both take milliseconds once the cgroup is
// empty; the bound only keeps a stuck kernel from holding a delete.
constexpr std::chrono::milliseconds kTeardownWait{2000};

// Waits until `pid` has exited (a zombie, for a child) or `timeout` passes.
void WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return;  // gone already
  pollfd p{pidfd.get(), POLLIN, 0};
  while (::poll(&p, 1, static_cast<int>(timeout.count())) < 0 && errno == EINTR) {
  }
}

double Now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string HashHex(const std::string& text) {
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx",
                static_cast<unsigned long long>(runtime::Fnv1a(text)),
                static_cast<unsigned long long>(runtime::Fnv1a(text, 0x9e3779b97f4a7c15ULL)));
  return hex;
}

// mkdir -p below an existing directory; new directories get 0777 (the sandbox's uid
// writes there, as in the thread directories).
Status MakeDirs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return Ok();
  const size_t slash = path.rfind('/');
  if (slash != 0 && slash != std::string::npos) RETURN_IF_ERROR(MakeDirs(path.substr(0, slash)));
  if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST) return Error::FromErrno(errno, path);
  (void)::chmod(path.c_str(), 0777);
  return Ok();
}

bool IsRealDir(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Makes the mount point of the skills view `view` ("/custom") in skills.path, as runc makes
// a nested bind's mount point in its parent's source: nothing can be created in the
// read-only tree the jail sees. Only plain names below skills.path, never "." or "..".
Status MakeViewMountPoint(const std::string& skills_dir, const std::string& view) {
  std::string path = skills_dir;
  for (size_t start = 1; start <= view.size();) {
    const size_t slash = std::min(view.find('/', start), view.size());
    const std::string part = view.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") {
      return Error(ErrorCode::kInvalidArgument, "not a plain path below /mnt/skills");
    }
    path += "/" + part;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno(errno, path);
    start = slash + 1;
  }
  if (!IsRealDir(path)) return Error(ErrorCode::kInvalidArgument, path + " is not a directory");
  return Ok();
}

// A skills view (/mnt/skills/<view>), always read-only. With skills.path bound at
// /mnt/skills the view's mount point is made there when missing (MakeViewMountPoint); a
// view whose mount point cannot be made is skipped with a warning, as a missing host
// directory is by DeerFlow's own backends.
void AddSkillsView(const std::string& host, const std::string& container, runtime::JailSpec* spec) {
  for (const auto& m : spec->mounts) {
    if (m.container_path == container) return;  // the first one wins, as in DeerFlow
  }
  const std::string view = container.substr(std::string("/mnt/skills").size());
  if (spec->skills_dir && !IsRealDir(*spec->skills_dir + view)) {
    if (Status made = MakeViewMountPoint(*spec->skills_dir, view); !made) {
      spdlog::warn("skills view {}: no mount point for it in skills.path ({}); skipped", container,
                   made.error().message());
      return;
    }
    spdlog::info("skills view {}: made its mount point {}{} in skills.path", container,
                 *spec->skills_dir, view);
  }
  spec->mounts.push_back({host, container, true});
}

// The extra mounts as jail mounts (docs/deerflow-contract.md §4): the skills views
// (/mnt/skills/custom, /mnt/skills/integrations) and /mnt/acp-workspace read-only whatever
// the request says; lark-cli's as asked. Then the views the reference provisioner derives
// itself when their host directories exist: {base}/skills_view/public and the user's
// {base}/users/{user}/skills_view/{custom,legacy}.
Status ApplyExtraMounts(const std::vector<ExtraMount>& mounts, const std::string& base,
                        const std::string& user, runtime::JailSpec* spec) {
  for (const ExtraMount& m : mounts) {
    if (m.container_path.rfind("/mnt/skills/", 0) == 0) {
      AddSkillsView(m.host_path, m.container_path, spec);
      continue;
    }
    if (!m.read_only) RETURN_IF_ERROR(MakeDirs(m.host_path));
    if (m.container_path == "/mnt/acp-workspace") {
      spec->acp_workspace_dir = m.host_path;  // always read-only in a corral jail
      continue;
    }
    spec->mounts.push_back({m.host_path, m.container_path, m.read_only});
  }
  const std::vector<std::pair<std::string, std::string>> derived = {
      {base + "/skills_view/public", "/mnt/skills/public"},
      {base + "/users/" + user + "/skills_view/custom", "/mnt/skills/custom"},
      {base + "/users/" + user + "/skills_view/legacy", "/mnt/skills/legacy"}};
  for (const auto& [host, container] : derived) {
    if (IsRealDir(host)) AddSkillsView(host, container, spec);
  }
  return Ok();
}

}  // namespace

std::string CorralNameFor(const std::string& sandbox_id) {
  if (sandbox_id.size() <= 61) return "df-" + sandbox_id;
  return "dfh-" + HashHex(sandbox_id);
}

SandboxManager::SandboxManager(ManagerOptions options, SandboxRegistry registry, AioApi* aio)
    : options_(std::move(options)), registry_(std::move(registry)), aio_(aio) {
  if (auto store = runtime::SandboxStore::Open()) store_ = std::move(*store);
}

bool SandboxManager::Alive(const Managed& m) const {
  return m.init_pid > 0 && runtime::ProcessRunning(m.init_pid, m.start_ticks);
}

bool SandboxManager::StillRemovable(const std::string& sandbox_id, double min_idle) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end()) return false;
  if (!Alive(it->second)) return true;
  return min_idle >= 0 && it->second.in_flight == 0 && IdleSeconds(it->second, Now()) >= min_idle;
}

double SandboxManager::IdleSeconds(const Managed& m, double now) const {
  double last = std::max(m.last_call, m.entry.created_at);
  if (store_) last = std::max(last, store_->LastUsed(m.entry.corral_name));
  return now - last;
}

std::vector<std::string> SandboxManager::Adopt() {
  // At start-up, before any request: nothing else touches the sandboxes yet. One listing
  // of the store (liveness only: a restart adopting thousands must not read every cgroup's
  // figures); what is to go is removed side by side at the end.
  std::vector<std::string> dropped;
  std::vector<runtime::UnreadableRecord> unreadable;
  std::map<std::string, runtime::SandboxInfo> listed;
  for (runtime::SandboxInfo& info :
       runtime::ListSandboxes(&unreadable, runtime::Inspect::kLiveness)) {
    std::string name = info.record.name;
    listed.emplace(std::move(name), std::move(info));
  }
  std::vector<std::string> to_remove;
  std::vector<std::function<std::string(const Status&)>> say;  // per removal; "" says nothing
  auto remove = [&](const std::string& name, std::function<std::string(const Status&)> line) {
    to_remove.push_back(name);
    say.push_back(std::move(line));
  };
  for (RegistryEntry& e : registry_.Load(&dropped)) {
    auto it = listed.find(e.corral_name);
    const bool same_thread =
        it != listed.end() && it->second.record.spec.user_data_dir == e.user_data;
    if (same_thread && it->second.alive) {
      Managed m;
      m.init_pid = it->second.record.init_pid;
      m.start_ticks = it->second.record.init_start_ticks;
      m.last_call = Now() - it->second.idle_seconds;
      m.paused = it->second.paused_seconds.has_value();
      m.entry = std::move(e);
      listed.erase(it);
      std::lock_guard<std::mutex> lock(mu_);
      sandboxes_[m.entry.sandbox_id] = std::move(m);
      continue;
    }
    dropped.push_back(e.sandbox_id + ": its sandbox " + e.corral_name + " is gone; forgotten");
    if (same_thread) {
      remove(e.corral_name, [](const Status&) { return std::string(); });
      listed.erase(it);
    }
    (void)registry_.Remove(e.sandbox_id);
  }
  // Sandboxes an earlier daemon made but never recorded (killed between the create and
  // the registry's write): nobody holds their token, and a create of that id makes a new
  // one, so they are removed. The names df-* and dfh-* are the daemon's own.
  auto daemons = [](const std::string& name) {
    return name.rfind("df-", 0) == 0 || name.rfind("dfh-", 0) == 0;
  };
  for (const auto& [name, info] : listed) {
    if (!daemons(name)) continue;
    remove(name, [name](const Status& st) {
      return "sandbox " + name + " was created but never recorded (the daemon stopped " +
             "in between): " + (st ? "removed" : "removing failed: " + st.error().message());
    });
  }
  // Records that cannot be read: the daemon's own sandboxes are removed (a create of the
  // id makes a new one over the same thread data); others are only named.
  for (const runtime::UnreadableRecord& u : unreadable) {
    if (u.name.empty()) {
      dropped.push_back("the sandbox store cannot be listed: " + u.path + ": " + u.why);
    } else if (daemons(u.name)) {
      remove(u.name, [u](const Status& st) {
        return "sandbox " + u.name + ": its record " + u.path + " cannot be read (" + u.why +
               "): " +
               (st ? "removed what was left of it; the thread's files are kept"
                   : "removing it failed: " + st.error().message());
      });
    } else {
      dropped.push_back("sandbox " + u.name + ": its record " + u.path + " cannot be read (" +
                        u.why + "); not the daemon's; `corral rm " + u.name + "` removes it");
    }
  }
  const std::vector<Status> removed = runtime::RemoveSandboxes(to_remove);
  for (size_t i = 0; i < removed.size(); ++i) {
    if (std::string line = say[i](removed[i]); !line.empty()) dropped.push_back(std::move(line));
  }
  // Warm sandboxes of an earlier daemon (kill -9): nobody can claim them now.
  for (std::string& line : runtime::WarmPool::RemoveStale(options_.base_spec.cgroups)) {
    dropped.push_back(std::move(line));
  }
  return dropped;
}

std::optional<std::string> SandboxManager::StartWarmPool() {
  if (options_.provider.warm <= 0 || warm_) return std::nullopt;
  runtime::JailSandboxProvider provider(options_.provider, options_.base_spec);
  runtime::JailSpec spec = provider.SpecFor(runtime::ThreadDirs{});  // directories: placeholders
  if (auto why = runtime::WarmPool::WhyNot(spec)) return "sandbox.warm is off: " + *why;
  warm_ =
      std::make_unique<runtime::WarmPool>(options_.provider.warm, std::move(spec), options_.slots);
  warm_->Start();
  return std::nullopt;
}

void SandboxManager::StopWarmPool() {
  if (warm_) warm_->Stop();
}

void SandboxManager::RemoveLocked(const std::string& sandbox_id, const char* why) {
  Managed m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(sandbox_id);
    if (it == sandboxes_.end()) return;
    m = std::move(it->second);
    sandboxes_.erase(it);
  }
  if (aio_ != nullptr) aio_->ForgetSandbox(sandbox_id);
  if (options_.slots != nullptr) options_.slots->Drop(m.entry.corral_name);
  Status st = runtime::RemoveSandbox(m.entry.corral_name);
  ReapRemovedInit(m.init_pid);
  if (aio_ != nullptr) aio_->Tidy(std::chrono::steady_clock::now() + kTeardownWait);
  if (Status r = registry_.Remove(sandbox_id); !r) {
    spdlog::warn("sandbox {}: registry: {}", sandbox_id, r.error().message());
  }
  if (!st && st.error().code() != ErrorCode::kNotFound) {
    // The daemon lets go of it either way; `corral ps` / `corral rm` still see it.
    spdlog::warn("sandbox {} ({}) {}, but removing it failed: {} (corral rm {} retries)",
                 sandbox_id, m.entry.corral_name, why, st.error().message(), m.entry.corral_name);
    return;
  }
  spdlog::info("sandbox {} ({}) removed: {}", sandbox_id, m.entry.corral_name, why);
}

void SandboxManager::EvictForSoftCap() {
  std::lock_guard<std::mutex> evicting(evict_mu_);
  const size_t cap = static_cast<size_t>(std::max(1, options_.provider.replicas));
  const double now = Now();
  auto store = runtime::SandboxStore::Open();        // once, not per sandbox
  std::vector<std::pair<double, std::string>> idle;  // (idle seconds, id)
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sandboxes_.size() < cap) return;
    for (const auto& [id, m] : sandboxes_) {
      if (m.in_flight > 0) continue;
      double s = IdleSeconds(m, now);
      if (s >= kEvictMinIdleSeconds) idle.emplace_back(s, id);
    }
  }
  std::sort(idle.rbegin(), idle.rend());  // the longest idle first
  size_t live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    live = sandboxes_.size();
  }
  for (const auto& [seconds, id] : idle) {
    if (live < cap) break;
    auto held = ids_.TryLock(id);  // being created, deleted or reaped: not ours to evict
    if (!held || !StillRemovable(id, kEvictMinIdleSeconds)) continue;
    RemoveLocked(id, "evicted: over sandbox.replicas and idle");
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.evicted;
    --live;
  }
}

CreateResult SandboxManager::Create(const CreateParams& params) {
  IdLocks::Guard held = ids_.Lock(params.sandbox_id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(params.sandbox_id);
    if (it != sandboxes_.end() && Alive(it->second)) {
      return {200, "", {it->first, it->second.entry.token, "Running"}};
    }
  }
  RemoveLocked(params.sandbox_id, "found dead on create");
  EvictForSoftCap();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sandboxes_.size() + creating_ >= static_cast<size_t>(options_.max_sandboxes)) {
      return {429,
              "sandbox limit reached (server.max_sandboxes = " +
                  std::to_string(options_.max_sandboxes) + "); delete one or retry later",
              {}};
    }
    ++creating_;
  }
  CreateResult result = MakeLocked(params);
  std::lock_guard<std::mutex> lock(mu_);
  --creating_;
  return result;
}

CreateResult SandboxManager::MakeLocked(const CreateParams& params) {
  const std::string& base = options_.provider.base_dir;
  std::string thread = params.thread_id.value_or(params.sandbox_id.size() <= 59
                                                     ? "anon-" + params.sandbox_id
                                                     : "anon-" + HashHex(params.sandbox_id));
  auto dirs = runtime::ThreadDirsFor(base, params.user_id, thread);
  if (!dirs) return {400, dirs.error().message(), {}};
  if (Status st = runtime::EnsureThreadDirs(*dirs); !st) {
    return {500, "thread directories: " + st.error().message(), {}};
  }
  runtime::JailSandboxProvider provider(options_.provider, options_.base_spec);
  runtime::CreateRequest req;
  req.spec = provider.SpecFor(*dirs);
  if (Status st = ApplyExtraMounts(params.extra_mounts, base, params.user_id, &req.spec); !st) {
    return {400, "extra mounts: " + st.error().message(), {}};
  }
  req.name = CorralNameFor(params.sandbox_id);
  req.idle_timeout_seconds = options_.provider.idle_timeout;

  // A sandbox of that name left by a daemon that died between create and registry write
  // is adopted when it serves this thread; a dead one is removed; anything else is not ours.
  if (auto info = runtime::InspectSandbox(req.name)) {
    if (info->record.spec.user_data_dir != dirs->user_data) {
      return {409,
              "a corral sandbox named " + req.name +
                  " exists and serves other data; remove it (corral rm " + req.name + ")",
              {}};
    }
    if (!info->alive) (void)runtime::RemoveSandbox(req.name);
  }
  pid_t init_pid = -1;
  uint64_t start_ticks = 0;
  bool ours = false;
  if (auto info = runtime::InspectSandbox(req.name); info && info->alive) {
    init_pid = info->record.init_pid;
    start_ticks = info->record.init_start_ticks;
  } else if (auto claimed = ClaimWarmLocked(params, req)) {
    init_pid = claimed->init_pid;
    start_ticks = claimed->init_start_ticks;
    ours = true;
  } else {
    auto record = runtime::CreateSandbox(req);
    if (!record) return {500, "sandbox creation failed: " + record.error().message(), {}};
    init_pid = record->init_pid;
    start_ticks = record->init_start_ticks;
    ours = true;
  }
  auto token = RandomToken();
  Managed m;
  m.entry = {params.sandbox_id, req.name, token ? *token : "", params.user_id, params.thread_id,
             dirs->user_data,   Now()};
  m.init_pid = init_pid;
  m.start_ticks = start_ticks;
  m.last_call = m.entry.created_at;
  Status saved = token ? registry_.Save(m.entry) : Status(token.error());
  if (!saved) {
    if (options_.slots != nullptr) options_.slots->Drop(req.name);
    (void)runtime::RemoveSandbox(req.name);
    return {500, "sandbox registry: " + saved.error().message(), {}};
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (ours) children_.insert(init_pid);
  ++counts_.created;
  SandboxView view{params.sandbox_id, m.entry.token, "Running"};
  sandboxes_[params.sandbox_id] = std::move(m);
  return {200, "", view};
}

std::optional<runtime::SandboxRecord> SandboxManager::ClaimWarmLocked(
    const CreateParams& params, const runtime::CreateRequest& req) {
  if (options_.provider.warm <= 0) return std::nullopt;  // no pool: nothing to explain
  if (!warm_) {
    CountCold(params, "pool_off", "the warm pool is off (see the log at start)");
    return std::nullopt;
  }
  // Extra mounts (DeerFlow's /mnt/acp-workspace and skills views) are bound by the claim.
  if (auto why = runtime::WarmPool::WhyNot(req.spec)) {
    CountCold(params, "spec", *why);
    return std::nullopt;
  }
  auto warm = warm_->Take();
  if (!warm) {
    CountCold(params, "pool_empty", "no warm sandbox was ready");
    return std::nullopt;
  }
  // NOTE: the warm sandbox was made before its thread was known. What derives from the
  // thread (its directories, its mounts, a reserved host identity's slot) is bound or
  // mapped by the claim, which checks that the rest of the spec equals the warm one's.
  auto claimed =
      runtime::ClaimWarmSandbox(warm->name, req.name, req.spec, req.idle_timeout_seconds);
  {
    std::lock_guard<std::mutex> lock(mu_);
    children_.insert(warm->init_pid);  // our child either way: reaped once it is gone
    if (claimed) ++counts_.created_warm;
  }
  if (options_.slots != nullptr) {  // its slot (same id, same init) follows it, or goes
    if (claimed) {
      options_.slots->Update(*claimed);
    } else {
      options_.slots->Drop(warm->name);
    }
  }
  if (!claimed) {
    CountCold(params, "claim_failed",
              "claiming warm sandbox " + warm->name + " failed: " + claimed.error().message());
    return std::nullopt;
  }
  return std::move(*claimed);
}

void SandboxManager::CountCold(const CreateParams& params, const std::string& reason,
                               const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.created_cold[reason];
  }
  if (reason == "claim_failed") {
    spdlog::warn("sandbox {}: created cold: {}", params.sandbox_id, why);
  } else {
    spdlog::info("sandbox {}: created cold: {}", params.sandbox_id, why);
  }
}

std::optional<SandboxView> SandboxManager::Find(const std::string& sandbox_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(sandbox_id);
    if (it == sandboxes_.end()) return std::nullopt;
    if (Alive(it->second)) return SandboxView{sandbox_id, it->second.entry.token, "Running"};
  }
  IdLocks::Guard held = ids_.Lock(sandbox_id);
  if (!StillRemovable(sandbox_id, -1)) {  // re-created meanwhile (or already removed)
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(sandbox_id);
    if (it == sandboxes_.end()) return std::nullopt;
    return SandboxView{sandbox_id, it->second.entry.token, "Running"};
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.found_dead;
  }
  RemoveLocked(sandbox_id, "found dead");
  return std::nullopt;
}

std::vector<SandboxView> SandboxManager::List() {
  std::vector<SandboxView> live;
  std::vector<std::string> dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, m] : sandboxes_) {
      if (Alive(m)) {
        live.push_back({id, m.entry.token, "Running"});
      } else {
        dead.push_back(id);
      }
    }
  }
  for (const std::string& id : dead) (void)Find(id);  // cleans it up
  return live;
}

Status SandboxManager::Delete(const std::string& sandbox_id) {
  IdLocks::Guard held = ids_.Lock(sandbox_id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sandboxes_.count(sandbox_id)) ++counts_.deleted;
  }
  RemoveLocked(sandbox_id, "deleted");
  ReapChildren();
  return Ok();
}

std::optional<AioSandboxRef> SandboxManager::BeginCall(const std::string& sandbox_id,
                                                       const std::string& token, bool key_ok) {
  static const std::string kDummy(64, '0');
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  const std::string& expected = it == sandboxes_.end() ? kDummy : it->second.entry.token;
  const bool token_ok = ConstantTimeEquals(token, expected);
  if (it == sandboxes_.end() || !(token_ok || key_ok)) return std::nullopt;
  ++it->second.in_flight;
  ++counts_.calls_in_flight;
  it->second.last_call = Now();
  return AioSandboxRef{sandbox_id, it->second.entry.corral_name};
}

void SandboxManager::EndCall(const std::string& sandbox_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (counts_.calls_in_flight > 0) --counts_.calls_in_flight;
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end()) return;
  if (it->second.in_flight > 0) --it->second.in_flight;
  it->second.last_call = Now();
}

void SandboxManager::Reap() {
  using IdleAction = runtime::ProviderConfig::IdleAction;
  const double idle_timeout = options_.provider.idle_timeout;
  const bool pause_idle = options_.provider.idle_action == IdleAction::kPause;
  const double paused_timeout = options_.provider.paused_timeout;
  // The sandboxes are copied under the lock and looked at outside it (a /proc read per
  // init, a stat or two per sandbox): with thousands of them, every call would otherwise
  // wait.
  std::vector<std::pair<std::string, Managed>> looks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    looks.assign(sandboxes_.begin(), sandboxes_.end());
  }
  const double now = Now();
  enum class Step { kRemoveDead, kRemoveIdle, kRemovePaused, kPause };
  std::vector<std::pair<std::string, Step>> steps;
  std::vector<std::pair<std::string, bool>> paused_now;  // the marker, for Counts()
  for (const auto& [id, m] : looks) {
    if (!Alive(m)) {
      steps.emplace_back(id, Step::kRemoveDead);
      continue;
    }
    const bool paused = store_ && store_->PausedSince(m.entry.corral_name).has_value();
    if (paused != m.paused) paused_now.emplace_back(id, paused);
    if (idle_timeout <= 0 || m.in_flight > 0) continue;
    const double idle = IdleSeconds(m, now);
    if (!pause_idle) {
      if (idle > idle_timeout) steps.emplace_back(id, Step::kRemoveIdle);
    } else if (paused) {
      if (paused_timeout > 0 && idle > paused_timeout) steps.emplace_back(id, Step::kRemovePaused);
    } else if (idle > idle_timeout) {
      steps.emplace_back(id, Step::kPause);
    }
  }
  looks.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, paused] : paused_now) {
      if (auto it = sandboxes_.find(id); it != sandboxes_.end()) it->second.paused = paused;
    }
  }
  // Removals wait on the kernel, not the CPU: side by side, so that a burst of expiries
  // (a fleet of threads idle since the night) goes in seconds.
  ForEachInParallel(steps.size(), runtime::DefaultRemovalParallelism(), [&](size_t i) {
    const auto& [id, step] = steps[i];
    auto held = ids_.TryLock(id);  // being created or deleted right now: next round
    if (!held) return;
    const double min_idle = step == Step::kRemoveDead     ? -1
                            : step == Step::kRemovePaused ? paused_timeout
                                                          : idle_timeout;
    if (!StillRemovable(id, min_idle)) return;
    if (step == Step::kPause) return PauseLocked(id);
    RemoveLocked(id, step == Step::kRemoveDead     ? "found dead"
                     : step == Step::kRemovePaused ? "paused and idle longer than "
                                                     "sandbox.paused_timeout"
                                                   : "idle longer than sandbox.idle_timeout");
    std::lock_guard<std::mutex> lock(mu_);
    ++(step == Step::kRemoveDead     ? counts_.found_dead
       : step == Step::kRemovePaused ? counts_.reaped_paused
                                     : counts_.reaped_idle);
  });
  ReapChildren();
  // Sessions that ended by themselves, and implicit ones idle too long, go without waiting
  // for a call to come.
  if (aio_ != nullptr) aio_->Tidy(std::chrono::steady_clock::now());
}

void SandboxManager::PauseLocked(const std::string& sandbox_id) {
  // Marked paused before the freeze: a call that comes meanwhile sees it and resumes the
  // sandbox (after this pause, which holds the sandbox's pause lock), rather than running
  // an exec that the freeze would then stop.
  std::string name;
  double last_call = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(sandbox_id);
    if (it == sandboxes_.end() || it->second.in_flight > 0) return;
    name = it->second.entry.corral_name;
    last_call = it->second.last_call;
    it->second.paused = true;
  }
  Status st = runtime::PauseSandbox(name);
  bool called = false;  // a call began since the reaper looked: it must not stay frozen
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(sandbox_id);
    if (it != sandboxes_.end()) {
      called = it->second.in_flight > 0 || it->second.last_call != last_call;
      if (!st || called) it->second.paused = false;
    }
  }
  if (!st) {
    // Left running; the next round tries again.
    spdlog::warn("sandbox {} ({}): idle, but pausing it failed: {}", sandbox_id, name,
                 st.error().message());
    return;
  }
  if (called) {
    if (Status r = runtime::ResumeSandbox(name); !r) {
      spdlog::warn(
          "sandbox {} ({}): a call came while it was being paused, and resuming it "
          "failed: {}",
          sandbox_id, name, r.error().message());
    }
    return;
  }
  spdlog::info("sandbox {} ({}): paused (idle longer than sandbox.idle_timeout)", sandbox_id, name);
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_.paused_idle;
}

bool SandboxManager::Paused(const std::string& sandbox_id) const {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(sandbox_id);
    if (it == sandboxes_.end()) return false;
    if (it->second.paused) return true;
    name = it->second.entry.corral_name;
  }
  // Paused on the host (`corral pause df-...`) since the reaper last looked.
  return store_ && store_->PausedSince(name).has_value();
}

Status SandboxManager::Resume(const std::string& sandbox_id) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(sandbox_id);
    if (it == sandboxes_.end()) return Ok();
    name = it->second.entry.corral_name;
  }
  RETURN_IF_ERROR(runtime::ResumeSandbox(name));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = sandboxes_.find(sandbox_id); it != sandboxes_.end()) {
    it->second.paused = false;
    it->second.last_call = Now();
  }
  ++counts_.resumed;
  return Ok();
}

void SandboxManager::ReapChildren() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = children_.begin(); it != children_.end();) {
    int status;
    pid_t r = ::waitpid(*it, &status, WNOHANG);
    it = (r == *it || (r < 0 && errno == ECHILD)) ? children_.erase(it) : std::next(it);
  }
}

void SandboxManager::ReapRemovedInit(pid_t init_pid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!children_.count(init_pid)) return;  // not ours, or reaped already
  }
  WaitForExit(init_pid, kTeardownWait);
  ReapChildren();
}

ManagerCounts SandboxManager::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  ManagerCounts c = counts_;
  c.running = sandboxes_.size();
  for (const auto& [id, m] : sandboxes_) c.paused += m.paused ? 1 : 0;
  if (warm_) c.warm = warm_->Counts();
  return c;
}

}  // namespace corral::server
