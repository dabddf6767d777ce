// v1/bash/*: exec (BashExecResult: stdout and stderr apart), output, kill, write, sessions
// (create, list, close). Never a 404 from v1/bash/exec: DeerFlow reads that as "this
// sandbox has no bash API" for good, so an unknown session_id there makes the session.
//
// exec without a session and without async_mode is a one-shot exec (bash -c in a fresh
// process of the sandbox, `env` in its environment only) on a thread of its own that
// lives exactly as long as the command (its parent-death signal is tied to that thread).
// With a session it runs in that session's shell with the assignments prefixed to the
// command, which bash keeps for that command only.
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "base/fd_pair.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/provider_config.h"
#include "server/aio/internal.h"

namespace corral::server {
namespace {

using aio::CmdStatus;
using aio::CommandState;
using aio::Ok;
using aio::OptInt;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kDefaultMaxOutput = 50000;
constexpr double kNever = 3e8;

const char* BashStatus(CmdStatus s) {
  switch (s) {
    case CmdStatus::kRunning:
      return "running";
    case CmdStatus::kCompleted:
      return "completed";
    case CmdStatus::kNoChangeTimeout:
    case CmdStatus::kHardTimeout:
      return "timed_out";
    case CmdStatus::kTerminated:
      return "killed";
  }
  return "completed";
}

json BashResult(const std::string& session_id, const CommandState& st, size_t max_output) {
  return {{"session_id", session_id},
          {"command_id", st.command_id},
          {"command", st.command},
          {"status", BashStatus(st.status)},
          {"stdout", aio::MiddleTruncate(st.output, max_output)},
          {"stderr", aio::MiddleTruncate(st.errors, max_output)},
          {"exit_code", OptInt(st.exit_code)},
          {"offset", st.output.size()},
          {"stderr_offset", st.errors.size()}};
}

json BashSessionInfo(aio::ShellSession& s) {
  CommandState latest = s.Latest();
  bool running = latest.exists && latest.status == CmdStatus::kRunning;
  std::string wd = s.working_dir();
  return {{"session_id", s.id()},
          {"status", s.closed() ? "closed" : "ready"},
          {"working_dir", wd.empty() ? "/mnt/user-data/workspace" : wd},
          {"created_at", aio::IsoTime(s.created_at())},
          {"last_used_at", aio::IsoTime(s.last_used_at())},
          {"current_command", running ? json(latest.command) : json(nullptr)},
          {"command_count", s.commands_run()}};
}

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(seconds, 1e9) * 1000));
}

void CheckExecDir(aio::Fields& f, const std::optional<std::string>& exec_dir) {
  if (exec_dir && (exec_dir->empty() || (*exec_dir)[0] != '/')) {
    f.Invalid("exec_dir", "value_error", "Value error, exec_dir must be an absolute path");
  }
}

void CheckSessionId(aio::Fields& f, const std::optional<std::string>& id) {
  if (id && id->size() > 256) {
    f.Invalid("session_id", "string_too_long", "String should have at most 256 characters");
  }
}

}  // namespace

void AioApi::Impl::OneShotBash(const AioSandboxRef& ref, aio::CommandRequest request,
                               std::optional<double> hard_timeout, size_t max_output, Reply reply) {
  // `one` stays here for Shutdown to send a stop byte on; `other` is the exec's interrupt_fd.
  auto stop = MakeSocketPair();
  if (!stop) return reply(aio::Fail("cannot start the command: " + stop.error().message()));
  uint64_t key;
  {
    std::lock_guard lock(mu);
    key = next_oneshot++;
    oneshots[key] = stop->one.get();
  }
  std::thread([this, ref, request = std::move(request), hard_timeout, max_output,
               reply = std::move(reply), ours = std::move(stop->one),
               theirs = std::move(stop->other), key]() mutable {
    runtime::ExecRequest req;
    req.sandbox = ref.corral_name;
    req.argv = {"bash", "-c", request.command};
    req.env = request.env;
    req.workdir = request.exec_dir;
    if (hard_timeout) req.timeout_seconds = *hard_timeout;
    req.io.capture_output = true;
    req.io.interrupt_fd = theirs.get();  // Shutdown's stop; keeps corral's signal handling out
    auto outcome = runtime::ExecInSandbox(req);
    CommandState st;
    st.command_id = aio::RandomUuid();
    st.command = request.command;
    st.exists = true;
    bool ok = true;
    if (!outcome || outcome->status == runtime::RunStatus::kSetupFailed) {
      ok = false;
      st.status = CmdStatus::kTerminated;
      st.errors = !outcome               ? outcome.error().message()
                  : outcome->setup_error ? outcome->setup_error->message
                                         : "the command could not start";
    } else {
      st.output = outcome->stdout_stream.text;
      st.errors = outcome->stderr_stream.text;
      if (outcome->status == runtime::RunStatus::kTimedOut) {
        st.status = CmdStatus::kHardTimeout;
      } else if (outcome->interrupted_by) {
        st.status = CmdStatus::kTerminated;
      } else {
        st.status = CmdStatus::kCompleted;
        st.exit_code = outcome->signal ? 128 + *outcome->signal : outcome->exit_code;
      }
    }
    json data = BashResult(aio::RandomUuid(), st, max_output);
    reply(ok ? Ok(data) : aio::Fail("the command could not run: " + st.errors, data));
    theirs.Reset();
    std::lock_guard lock(mu);  // the last touch of *this: AioApi's destructor waits for it
    oneshots.erase(key);
    ours.Reset();
    oneshots_cv.notify_all();
  }).detach();
}

void AioApi::Impl::BashListSessions(Call& call, Reply reply) {
  json list = json::array();
  for (auto& s : List(call.ref.sandbox_id, SessionKind::kBash)) list.push_back(BashSessionInfo(*s));
  reply(Ok(list));
}

void AioApi::Impl::BashCloseSession(Call& call, Reply reply) {
  if (!Remove(call.ref.sandbox_id, SessionKind::kBash, call.params.Get("id"))) {
    return reply(aio::SessionNotFound());
  }
  reply(Ok(nullptr, "Session closed"));
}

void AioApi::Impl::BashExec(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto command = f.String("command", true);
  auto session_id = f.String("session_id");
  auto exec_dir = f.String("exec_dir");
  auto env = f.StringMap("env");
  bool async = f.Bool("async_mode").value_or(false);
  auto timeout = f.Number("timeout");
  auto hard = f.Number("hard_timeout");
  auto max_output = f.Integer("max_output_length");
  for (const auto& [name, v] : env.value_or(std::map<std::string, std::string>{})) {
    if (!runtime::IsValidEnvName(name)) {
      f.Invalid("env", "value_error", "Value error, invalid environment variable name: " + name);
    }
  }
  if (timeout && !(*timeout > 0))
    f.Invalid("timeout", "greater_than", "Input should be greater than 0");
  if (hard && !(*hard > 0))
    f.Invalid("hard_timeout", "greater_than", "Input should be greater than 0");
  if (max_output && *max_output < 1)
    f.Invalid("max_output_length", "greater_than", "Input should be greater than 0");
  CheckExecDir(f, exec_dir);
  CheckSessionId(f, session_id);
  if (!f.ok()) return reply(f.Error());
  aio::CommandRequest cr;
  cr.command = *command;
  cr.exec_dir = exec_dir;
  for (const auto& [k, v] : env.value_or(std::map<std::string, std::string>{}))
    cr.env.emplace_back(k, v);
  cr.no_change_timeout = kNever;
  cr.hard_timeout = hard;
  size_t limit = static_cast<size_t>(max_output.value_or(kDefaultMaxOutput));
  const bool has_id = session_id && !session_id->empty();
  if (!has_id && !async && !timeout) {  // nothing to poll later: a one-shot exec
    {
      std::lock_guard lock(mu);
      if (shutting_down) return reply(aio::Fail("the server is shutting down"));
    }
    return OneShotBash(call.ref, std::move(cr), hard, limit, std::move(reply));
  }
  auto opened =
      Open(call.ref, SessionKind::kBash, has_id ? *session_id : "", aio::SessionOptions{});
  if (!opened) return reply(aio::Fail(opened.error().message()));
  auto session = *opened;
  auto cid = session->Submit(std::move(cr));
  if (!cid) return reply(aio::Fail(cid.error().message()));
  std::string sid = session->id();
  if (async) {
    CommandState st;
    st.command_id = *cid;
    st.command = *command;
    return reply(Ok(BashResult(sid, st, limit), "Command started"));
  }
  auto deadline = timeout ? Clock::now() + Millis(*timeout) : aio::SteadyTime::max();
  session->Await(*cid, deadline, [reply, sid, limit](const CommandState& st) {
    reply(Ok(BashResult(sid, st, limit)));
  });
}

void AioApi::Impl::BashCreateSession(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = f.String("session_id");
  auto exec_dir = f.String("exec_dir");
  (void)f.String("snapshot_path");
  CheckExecDir(f, exec_dir);
  CheckSessionId(f, id);
  if (!f.ok()) return reply(f.Error());
  aio::SessionOptions so;
  so.workdir = exec_dir;
  so.no_change_timeout = kNever;
  auto opened =
      Open(call.ref, SessionKind::kBash, id && !id->empty() ? *id : aio::RandomUuid(), so);
  if (!opened) return reply(aio::Fail(opened.error().message()));
  reply(Ok(BashSessionInfo(**opened), "Session created"));
}

void AioApi::Impl::BashOutput(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = f.String("session_id", true);
  auto command_id = f.String("command_id");
  auto offset = f.Integer("offset");
  auto err_offset = f.Integer("stderr_offset");
  bool wait = f.Bool("wait").value_or(false);
  auto wait_timeout = f.Number("wait_timeout");
  if (!f.ok()) return reply(f.Error());
  auto s = Find(call.ref.sandbox_id, SessionKind::kBash, *id);
  if (!s) return reply(aio::SessionNotFound());
  auto deadline = wait ? Clock::now() + Millis(std::clamp(wait_timeout.value_or(30.0), 0.0, 3600.0))
                       : Clock::now();
  std::string sid = s->id();
  size_t out_from = static_cast<size_t>(std::max<int64_t>(0, offset.value_or(0)));
  size_t err_from = static_cast<size_t>(std::max<int64_t>(0, err_offset.value_or(0)));
  s->Await(
      command_id.value_or(""), deadline, [reply, sid, out_from, err_from](const CommandState& st) {
        json cmd = st.exists ? json{{"command_id", st.command_id},
                                    {"command", st.command},
                                    {"status", BashStatus(st.status)},
                                    {"exit_code", OptInt(st.exit_code)}}
                             : json(nullptr);
        reply(Ok(json{{"session_id", sid},
                      {"stdout", out_from < st.output.size() ? st.output.substr(out_from) : ""},
                      {"stderr", err_from < st.errors.size() ? st.errors.substr(err_from) : ""},
                      {"offset", st.output.size()},
                      {"stderr_offset", st.errors.size()},
                      {"command", cmd}}));
      });
}

void AioApi::Impl::BashKill(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = f.String("session_id", true);
  (void)f.String("signal");
  if (!f.ok()) return reply(f.Error());
  auto s = Find(call.ref.sandbox_id, SessionKind::kBash, *id);
  if (!s) return reply(aio::SessionNotFound());
  bool was = s->KillRunning();
  reply(Ok(nullptr, was ? "Command killed" : "No command was running"));
}

void AioApi::Impl::BashWrite(Call& call, Reply reply) {
  aio::Fields f(call.request.body);
  auto id = f.String("session_id", true);
  (void)f.String("input", true, true);
  (void)f.String("command_id");
  if (!f.ok()) return reply(f.Error());
  if (!Find(call.ref.sandbox_id, SessionKind::kBash, *id)) return reply(aio::SessionNotFound());
  reply(aio::Fail("writing to a command's stdin is not supported: commands run with stdin at EOF"));
}

}  // namespace corral::server
