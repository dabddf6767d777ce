// v1/shell/*: exec, view, wait, kill, write, sessions (create, list, update, delete,
// stats). Shapes: ShellCommandResult, ShellViewResult, ShellWaitResult, ShellKillResult,
// ShellCreateSessionResponse, ActiveShellSessionsResult (the agent_sandbox SDK's types).
#include "server/aio/internal.h"

namespace corral::server {
namespace {

using aio::CmdStatus;
using aio::CommandState;
using aio::Ok;
using aio::OptInt;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxIdChars = 256;
constexpr size_t kConsoleRecords = 20;
constexpr double kMaxWaitSeconds = 3600;

std::string Cut(const std::string& s, bool truncate, size_t limit) {
  return truncate ? aio::MiddleTruncate(s, limit) : s;
}

json Record(const CommandState& s, bool truncate, size_t limit) {
  return {{"ps1", "sandbox@corral:" + (s.cwd.empty() ? std::string("~") : s.cwd) + " $"},
          {"command", s.command},
          {"output", Cut(s.output, truncate, limit)}};
}

json CommandResult(const std::string& session_id, const CommandState& s, bool truncate,
                   size_t limit) {
  return {{"session_id", session_id},
          {"command", s.command},
          {"status", aio::CmdStatusName(s.status)},
          {"output", Cut(s.output, truncate, limit)},
          {"console", json::array({Record(s, truncate, limit)})},
          {"exit_code", OptInt(s.exit_code)}};
}

json ViewResult(aio::ShellSession& session, size_t limit) {
  json console = json::array();
  auto history = session.History();
  size_t from = history.size() > kConsoleRecords ? history.size() - kConsoleRecords : 0;
  for (size_t i = from; i < history.size(); ++i) {
    if (history[i].command_id == session.Latest().command_id) break;
    console.push_back(Record(history[i], true, limit));
  }
  CommandState latest = session.Latest();
  if (!latest.exists) {
    return {{"output", ""},          {"session_id", session.id()}, {"console", console},
            {"status", "completed"}, {"command", nullptr},         {"exit_code", nullptr}};
  }
  console.push_back(Record(latest, true, limit));
  return {{"output", Cut(latest.output, true, limit)},
          {"session_id", session.id()},
          {"console", console},
          {"status", aio::CmdStatusName(latest.status)},
          {"command", latest.command},
          {"exit_code", OptInt(latest.exit_code)}};
}

json SessionInfo(aio::ShellSession& s) {
  auto now = std::chrono::system_clock::now();
  CommandState latest = s.Latest();
  bool running = latest.exists && latest.status == CmdStatus::kRunning;
  std::string wd = s.working_dir();
  return {{"working_dir", wd.empty() ? "/mnt/user-data/workspace" : wd},
          {"created_at", aio::IsoTime(s.created_at())},
          {"last_used_at", aio::IsoTime(s.last_used_at())},
          {"age_seconds",
           std::chrono::duration_cast<std::chrono::seconds>(now - s.created_at()).count()},
          {"status", s.closed() ? "closed"
                     : running  ? "running"
                                : "idle"},
          {"current_command", running ? json(latest.command) : json(nullptr)}};
}

// Seconds fields that must be > 0 when given.
void RequirePositive(aio::Fields& f, const std::string& name, const std::optional<double>& v) {
  if (v && !(*v > 0)) f.Invalid(name, "greater_than", "Input should be greater than 0");
}

void CheckId(aio::Fields& f, const std::string& name, const std::optional<std::string>& id) {
  if (id && id->size() > kMaxIdChars) {
    f.Invalid(name, "string_too_long", "String should have at most 256 characters");
  }
}

void CheckDir(aio::Fields& f, const std::optional<std::string>& dir) {
  if (dir && (dir->empty() || (*dir)[0] != '/')) {
    f.Invalid("exec_dir", "value_error", "Value error, exec_dir must be an absolute path");
  }
}

// "id": required, at most kMaxIdChars (view, wait, kill, write, sessions/update).
std::optional<std::string> SessionIdField(aio::Fields& f) {
  auto id = f.String("id", true);
  CheckId(f, "id", id);
  return id;
}

}  // namespace

void AioApi::Impl::ShellListSessions(Call& call, Reply reply) {
  json sessions = json::object();
  for (auto& s : List(call.ref.sandbox_id, SessionKind::kShell))
    sessions[s->id()] = SessionInfo(*s);
  reply(Ok(json{{"sessions", sessions}}));
}

void AioApi::Impl::ShellDeleteSessions(Call& call, Reply reply) {
  for (auto& s : List(call.ref.sandbox_id, SessionKind::kShell)) {
    Remove(call.ref.sandbox_id, SessionKind::kShell, s->id());
  }
  reply(Ok(nullptr, "All sessions cleaned up"));
}

void AioApi::Impl::ShellSessionStats(Call& call, Reply reply) {
  auto all = List(call.ref.sandbox_id, SessionKind::kShell);
  size_t active = 0;
  for (auto& s : all) active += s->busy() ? 1 : 0;
  double max = static_cast<double>(options.max_sessions_per_sandbox);
  reply(Ok(json{{"total_sessions", all.size()},
                {"active_sessions", active},
                {"idle_sessions", all.size() - active},
                {"max_sessions", options.max_sessions_per_sandbox},
                {"session_timeout", 0},
                {"usage_ratio", max > 0 ? all.size() / max : 0.0}}));
}

void AioApi::Impl::ShellDeleteSession(Call& call, Reply reply) {
  const std::string& id = call.params.Get("id");
  if (!Remove(call.ref.sandbox_id, SessionKind::kShell, id)) return reply(aio::SessionNotFound());
  reply(Ok(nullptr, "Session " + id + " cleaned up"));
}

void AioApi::Impl::ShellExec(Call& call, Reply reply) {
  const size_t limit = options.shell_output_limit;
  aio::Fields f(call.request.body);
  auto command = f.String("command", true);
  auto id = f.String("id");
  auto exec_dir = f.String("exec_dir");
  bool async = f.Bool("async_mode").value_or(false);
  auto timeout = f.Number("timeout");
  auto no_change = f.Number("no_change_timeout");
  auto hard = f.Number("hard_timeout");
  bool truncate = f.Bool("truncate").value_or(true);
  (void)f.Bool("strict");
  (void)f.Bool("preserve_symlinks");
  RequirePositive(f, "timeout", timeout);
  RequirePositive(f, "no_change_timeout", no_change);
  RequirePositive(f, "hard_timeout", hard);
  CheckId(f, "id", id);
  CheckDir(f, exec_dir);
  if (!f.ok()) return reply(f.Error());
  std::shared_ptr<aio::ShellSession> session;
  if (id && !id->empty()) {
    session = Find(call.ref.sandbox_id, SessionKind::kShell, *id);
    if (!session) return reply(aio::SessionNotFound());
  } else {
    aio::SessionOptions so;
    so.no_change_timeout = options.default_no_change_timeout;
    auto opened = Open(call.ref, SessionKind::kShell, "", so);
    if (!opened) return reply(aio::Fail(opened.error().message()));
    session = *opened;
  }
  aio::CommandRequest cr;
  cr.command = *command;
  cr.exec_dir = exec_dir;
  cr.no_change_timeout = no_change;
  cr.hard_timeout = hard;
  auto cid = session->Submit(std::move(cr));
  if (!cid) return reply(aio::Fail(cid.error().message()));
  std::string sid = session->id();
  if (async) {
    CommandState st;
    st.command = *command;
    json r = CommandResult(sid, st, truncate, limit);
    r["output"] = nullptr;
    return reply(Ok(r, "Command started"));
  }
  auto deadline = timeout ? Clock::now() + std::chrono::milliseconds(
                                               static_cast<int64_t>(std::min(*timeout, 1e9) * 1000))
                          : aio::SteadyTime::max();
  session->Await(*cid, deadline, [reply, sid, truncate, limit](const CommandState& st) {
    reply(Ok(CommandResult(sid, st, truncate, limit)));
  });
}

void AioApi::Impl::ShellCreateSession(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = f.String("id");
  auto exec_dir = f.String("exec_dir");
  auto no_change = f.Number("no_change_timeout");
  (void)f.Bool("preserve_symlinks");
  RequirePositive(f, "no_change_timeout", no_change);
  CheckId(f, "id", id);
  if (exec_dir) CheckDir(f, exec_dir);
  if (!f.ok()) return reply(f.Error());
  aio::SessionOptions so;
  so.no_change_timeout = no_change.value_or(options.default_no_change_timeout);
  so.workdir = exec_dir;
  std::string want = id && !id->empty() ? *id : aio::RandomUuid();
  auto opened = Open(call.ref, SessionKind::kShell, want, so);
  if (!opened) return reply(aio::Fail(opened.error().message()));
  std::string wd = exec_dir ? *exec_dir : (*opened)->working_dir();
  reply(Ok(json{{"session_id", (*opened)->id()},
                {"working_dir", wd.empty() ? "/mnt/user-data/workspace" : wd}},
           "Session created"));
}

void AioApi::Impl::ShellUpdateSession(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = SessionIdField(f);
  auto no_change = f.Number("no_change_timeout");
  RequirePositive(f, "no_change_timeout", no_change);
  if (!f.ok()) return reply(f.Error());
  auto s = Find(call.ref.sandbox_id, SessionKind::kShell, *id);
  if (!s) return reply(aio::SessionNotFound());
  if (no_change) s->SetNoChangeTimeout(*no_change);
  reply(Ok(nullptr, "Session updated"));
}

void AioApi::Impl::ShellView(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = SessionIdField(f);
  if (!f.ok()) return reply(f.Error());
  auto s = Find(call.ref.sandbox_id, SessionKind::kShell, *id);
  if (!s) return reply(aio::SessionNotFound());
  reply(Ok(ViewResult(*s, options.shell_output_limit)));
}

void AioApi::Impl::ShellWait(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = SessionIdField(f);
  auto seconds = f.Number("seconds");
  auto max_wait = f.Number("max_wait_seconds");
  if (!f.ok()) return reply(f.Error());
  auto s = Find(call.ref.sandbox_id, SessionKind::kShell, *id);
  if (!s) return reply(aio::SessionNotFound());
  double wait = std::clamp(max_wait.value_or(seconds.value_or(30)), 0.0, kMaxWaitSeconds);
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(wait * 1000));
  s->Await("", deadline, [reply](const CommandState& st) {
    reply(Ok(json{{"status", st.exists ? aio::CmdStatusName(st.status) : "completed"},
                  {"exit_code", OptInt(st.exit_code)}}));
  });
}

void AioApi::Impl::ShellKill(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = SessionIdField(f);
  if (!f.ok()) return reply(f.Error());
  auto s = Find(call.ref.sandbox_id, SessionKind::kShell, *id);
  if (!s) return reply(aio::SessionNotFound());
  s->KillRunning();
  s->Await("", Clock::now() + std::chrono::seconds(10), [reply](const CommandState& st) {
    json code = OptInt(st.exit_code);
    reply(Ok(json{{"status", st.exists ? aio::CmdStatusName(st.status) : "completed"},
                  {"exit_code", code},
                  {"returncode", code}}));
  });
}

void AioApi::Impl::ShellWrite(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = SessionIdField(f);
  (void)f.String("input", true, true);
  (void)f.Bool("press_enter");
  if (!f.ok()) return reply(f.Error());
  auto s = Find(call.ref.sandbox_id, SessionKind::kShell, *id);
  if (!s) return reply(aio::SessionNotFound());
  CommandState st = s->Latest();
  reply(aio::Fail("writing to a command's stdin is not supported: commands run with stdin at EOF",
                  json{{"status", st.exists ? aio::CmdStatusName(st.status) : "completed"}}));
}

}  // namespace corral::server
