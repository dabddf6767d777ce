// The AIO API (server/aio/api.h): GET v1/sandbox, the session registry and the lifecycle
// (ForgetSandbox, Shutdown). The route table is routes.cc; the routes live in
// {file,shell,bash}_routes.cc.
#include "server/aio/api.h"

#include <sched.h>
#include <sys/socket.h>
#include <sys/utsname.h>

#include <csignal>
#include <ctime>
#include <thread>

#include "runtime/sandboxes/persistent.h"
#include "server/aio/context.h"
#include "server/aio/internal.h"

namespace corral::server {
namespace {

#ifdef CORRAL_VERSION
#define CORRAL_AIO_STR2(x) #x
#define CORRAL_AIO_STR(x) CORRAL_AIO_STR2(x)
constexpr const char* kVersion = "corral-" CORRAL_AIO_STR(CORRAL_VERSION);
#else
constexpr const char* kVersion = "corral";
#endif

}  // namespace

namespace aio {

std::string IsoTime(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

std::string MiddleTruncate(const std::string& s, size_t limit) {
  if (s.size() <= limit) return s;
  size_t head = limit / 2, tail = limit - head;
  // Back off to UTF-8 boundaries (never start or end inside a sequence).
  while (head > 0 && (static_cast<unsigned char>(s[head]) & 0xC0) == 0x80) --head;
  size_t from = s.size() - tail;
  while (from < s.size() && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) ++from;
  return s.substr(0, head) + "\n... [middle truncated: " + std::to_string(from - head) +
         " bytes] ...\n" + s.substr(from);
}

}  // namespace aio

AioApi::AioApi(AioApiOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

AioApi::~AioApi() {
  Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  impl_->files.Stop();
  std::vector<std::shared_ptr<aio::ShellSession>> all;
  {
    std::lock_guard lock(impl_->mu);
    for (auto& [id, s] : impl_->sandboxes) {
      for (auto* m : {&s.shell, &s.bash}) {
        for (auto& [sid, session] : *m) all.push_back(session);
      }
      if (s.spare) all.push_back(s.spare);
    }
    impl_->sandboxes.clear();
    for (auto& r : impl_->retired) all.push_back(std::move(r));
    impl_->retired.clear();
  }
  for (auto& s : all) s->Close(true);
  all.clear();  // joins each session's threads
  std::unique_lock lock(impl_->mu);
  impl_->oneshots_cv.wait(lock, [this] { return impl_->oneshots.empty(); });
}

void AioApi::Impl::SandboxInfo(Call& call, Reply reply) {
  files.Post([ref = call.ref, reply = std::move(reply)] {
    auto hold = runtime::HoldSandbox(ref.corral_name);
    if (!hold) {
      reply(HttpResponse::Json(503,
                               {{"detail", "sandbox is not running: " + hold.error().message()}}));
      return;
    }
    const auto& spec = hold->record.spec;
    std::string workspace = spec.workdir         ? *spec.workdir
                            : spec.user_data_dir ? "/mnt/user-data/workspace"
                                                 : "/";
    utsname u{};
    ::uname(&u);
    const std::string home = "/home/sandbox";
    nlohmann::json system = {
        {"os", "linux"},
        {"os_version", u.release},
        {"arch", u.machine},
        {"user", "sandbox"},
        {"home_dir", home},
        {"workspace", workspace},
        {"timezone", "UTC"},
        {"occupied_ports",
         aio::ListeningPorts(hold->record.init_pid, (hold->record.ns_flags & CLONE_NEWNET) != 0)}};
    nlohmann::json body = {{"success", true},
                           {"message", "Sandbox context"},
                           {"data", nullptr},
                           {"hint", nullptr},
                           {"home_dir", home},
                           {"workspace", workspace},
                           {"version", kVersion},
                           {"detail",
                            {{"system", system},
                             {"runtime", aio::SandboxRuntimes(hold->record.init_pid)},
                             {"utils", nlohmann::json::array()}}}};
    reply(HttpResponse::Json(200, body));
  });
}

// ---- the session registry -------------------------------------------------------------

std::shared_ptr<aio::ShellSession> AioApi::Impl::Find(const std::string& sandbox_id,
                                                      SessionKind kind, const std::string& id) {
  std::lock_guard lock(mu);
  auto it = sandboxes.find(sandbox_id);
  if (it == sandboxes.end()) return nullptr;
  auto& m = kind == SessionKind::kShell ? it->second.shell : it->second.bash;
  auto s = m.find(id);
  return s == m.end() ? nullptr : s->second;
}

Result<std::shared_ptr<aio::ShellSession>> AioApi::Impl::Open(const AioSandboxRef& ref,
                                                              SessionKind kind,
                                                              const std::string& id,
                                                              aio::SessionOptions base,
                                                              bool* created) {
  std::lock_guard lock(mu);
  if (shutting_down) return Error(ErrorCode::kIo, "the server is shutting down");
  SandboxSessions& sb = sandboxes[ref.sandbox_id];
  auto& m = kind == SessionKind::kShell ? sb.shell : sb.bash;
  if (!id.empty()) {
    auto it = m.find(id);
    if (it != m.end()) {
      if (created) *created = false;
      return it->second;
    }
  }
  const bool implicit = id.empty();
  // Make room: idle implicit sessions go first, oldest first.
  auto total = [&] { return sb.shell.size() + sb.bash.size(); };
  for (auto it = sb.implicit.begin(); it != sb.implicit.end();) {
    bool over = (implicit && sb.implicit.size() >= kImplicitKeep) ||
                total() >= options.max_sessions_per_sandbox;
    if (!over) break;
    auto& mm = it->first == SessionKind::kShell ? sb.shell : sb.bash;
    auto found = mm.find(it->second);
    // Only an idle one, and never one just made for a call that has yet to submit its
    // command. The check and the close are one step under the session's lock: checked
    // apart, that call's Submit could land between them and its command was failed.
    if (found == mm.end() ||
        found->second->CloseIfIdle(std::chrono::system_clock::time_point::max(), false)) {
      if (found != mm.end()) {
        Retire(found->second);
        mm.erase(found);
      }
      it = sb.implicit.erase(it);
    } else {
      ++it;
    }
  }
  if (total() >= options.max_sessions_per_sandbox) {
    return Error(ErrorCode::kIo, "too many sessions in this sandbox (" +
                                     std::to_string(options.max_sessions_per_sandbox) +
                                     "); delete some first");
  }
  base.corral_name = ref.corral_name;
  base.slots = options.session_slots;
  base.id = implicit ? aio::RandomUuid() : id;
  base.separate_stderr = kind == SessionKind::kBash;
  std::shared_ptr<aio::ShellSession> session;
  const bool spare_fits = implicit && kind == SessionKind::kShell && !base.workdir;
  if (spare_fits) {
    if (sb.spare && !sb.spare->closed()) session = std::move(sb.spare);
    if (sb.spare) Retire(std::move(sb.spare));
    sb.spare.reset();
    aio::SessionOptions next = base;
    next.id = aio::RandomUuid();
    // The sandbox's exec slot is for the shell a caller waits for: a spare started next to
    // a call's own new session starts the normal way, in the background.
    if (!session) next.slots = nullptr;
    sb.spare = aio::ShellSession::Start(std::move(next));
  }
  if (!session) session = aio::ShellSession::Start(std::move(base));
  m[session->id()] = session;
  if (implicit) sb.implicit.emplace_back(kind, session->id());
  if (created) *created = true;
  return session;
}

bool AioApi::Impl::Remove(const std::string& sandbox_id, SessionKind kind, const std::string& id) {
  std::lock_guard lock(mu);
  auto it = sandboxes.find(sandbox_id);
  if (it == sandboxes.end()) return false;
  auto& m = kind == SessionKind::kShell ? it->second.shell : it->second.bash;
  auto s = m.find(id);
  if (s == m.end()) return false;
  s->second->Close(false);
  Retire(s->second);
  m.erase(s);
  auto& imp = it->second.implicit;
  for (auto i = imp.begin(); i != imp.end(); ++i) {
    if (i->first == kind && i->second == id) {
      imp.erase(i);
      break;
    }
  }
  return true;
}

std::vector<std::shared_ptr<aio::ShellSession>> AioApi::Impl::List(const std::string& sandbox_id,
                                                                   SessionKind kind) {
  std::lock_guard lock(mu);
  std::vector<std::shared_ptr<aio::ShellSession>> out;
  auto it = sandboxes.find(sandbox_id);
  if (it == sandboxes.end()) return out;
  for (auto& [id, s] : kind == SessionKind::kShell ? it->second.shell : it->second.bash) {
    out.push_back(s);
  }
  return out;
}

void AioApi::Impl::Retire(std::shared_ptr<aio::ShellSession> s) { retired.push_back(std::move(s)); }

void AioApi::Impl::DropFinished() {
  // Destroying a finished session joins threads that have already returned: no wait.
  for (size_t i = 0; i < retired.size();) {
    if (retired[i]->finished()) {
      retired.erase(retired.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

void AioApi::Impl::CloseIdleImplicit() {
  auto tick = std::chrono::steady_clock::now();
  if (tick - last_sweep < std::chrono::seconds(10)) return;  // cheap enough, not per call
  last_sweep = tick;
  auto now = std::chrono::system_clock::now();
  for (auto& [sandbox_id, sb] : sandboxes) {
    for (auto it = sb.implicit.begin(); it != sb.implicit.end();) {
      auto& m = it->first == SessionKind::kShell ? sb.shell : sb.bash;
      auto found = m.find(it->second);
      if (found != m.end() && !found->second->CloseIfIdle(now - kImplicitIdle, true)) {
        ++it;  // busy, or used in the last kImplicitIdle
        continue;
      }
      if (found != m.end()) {
        Retire(found->second);
        m.erase(found);
      }
      it = sb.implicit.erase(it);
    }
  }
}

// ---- lifecycle ------------------------------------------------------------------------

void AioApi::ForgetSandbox(const std::string& sandbox_id) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->sandboxes.find(sandbox_id);
  if (it == impl_->sandboxes.end()) return;
  for (auto* m : {&it->second.shell, &it->second.bash}) {
    for (auto& [id, s] : *m) {
      s->Close(true);  // the sandbox goes: its shells and their jobs with it
      impl_->Retire(s);
    }
  }
  if (it->second.spare) {
    it->second.spare->Close(true);
    impl_->Retire(std::move(it->second.spare));
  }
  impl_->sandboxes.erase(it);
}

void AioApi::Tidy(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    bool all_finished = false;
    {
      std::lock_guard lock(impl_->mu);
      impl_->DropFinished();
      impl_->CloseIdleImplicit();
      all_finished = impl_->retired.empty();
    }
    if (all_finished || std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void AioApi::Shutdown(std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  auto everything = [this] {
    std::vector<std::shared_ptr<aio::ShellSession>> all;
    std::lock_guard lock(impl_->mu);
    for (auto& [id, s] : impl_->sandboxes) {
      for (auto* m : {&s.shell, &s.bash}) {
        for (auto& [sid, session] : *m) all.push_back(session);
      }
      if (s.spare) all.push_back(s.spare);
    }
    return all;
  };
  {
    std::lock_guard lock(impl_->mu);
    impl_->shutting_down = true;
  }
  // Running commands may finish until a second before the deadline...
  const auto cancel_at = deadline - std::chrono::seconds(1);
  for (;;) {
    bool busy = false;
    for (auto& s : everything()) busy = busy || s->busy();
    {
      std::lock_guard lock(impl_->mu);
      busy = busy || !impl_->oneshots.empty();
    }
    if (!busy || Clock::now() >= cancel_at) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // ...then they are cancelled: their callers get "terminated" / "killed" answers.
  for (auto& s : everything()) s->Close(false);
  {
    std::lock_guard lock(impl_->mu);
    for (auto& [n, fd] : impl_->oneshots) {
      unsigned char sig = SIGKILL;
      (void)::send(fd, &sig, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
  }
  for (auto& s : everything()) {
    while (!s->finished() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

size_t AioApi::live_sessions() const {
  std::lock_guard lock(impl_->mu);
  size_t n = 0;
  for (const auto& [id, s] : impl_->sandboxes) n += s.shell.size() + s.bash.size();
  return n;
}

}  // namespace corral::server
