#include "runtime/pool/pool_client.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "runtime/pool/pool_protocol.h"
#include "runtime/pool/pool_socket.h"
#include "runtime/run/phase_trace.h"
#include "runtime/run/signal_guard.h"
#include "runtime/spec/spec_json.h"

namespace corral::runtime {

namespace {

Result<nlohmann::json> ParseReply(const std::string& frame) {
  auto parsed = ParseJsonInput(frame);
  auto* reply_json = std::get_if<nlohmann::json>(&parsed);
  if (reply_json == nullptr || !reply_json->is_object() || !reply_json->contains("kind")) {
    return Error(ErrorCode::kIo, "pool server: malformed reply");
  }
  nlohmann::json& reply = *reply_json;
  if (reply["kind"] == "error") {
    return Error(ErrorCode::kIo, "pool server: " + reply.value("message", "unknown error"));
  }
  return reply;
}

// Sends the request frames; if the server hung up first, what it said before (a refusal)
// is the error.
Status SendRequest(int connection, const std::vector<std::string_view>& frames,
                   const std::vector<int>& fds) {
  Status sent = SendFrames(connection, frames, fds);
  if (sent) return sent;
  if (auto frame = ReceiveFrame(connection)) {
    auto reply = ParseReply(*frame);
    if (!reply) return reply.error();
  }
  return sent;
}

// Waits for the reply, forwarding each stop signal this process receives as one byte.
Result<std::string> AwaitReply(int connection) {
  SignalGuard stops;  // SIGINT/SIGTERM/SIGHUP now arrive on a signalfd
  for (;;) {
    pollfd fds[2] = {{connection, POLLIN, 0}, {stops.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "poll");
    }
    if (fds[1].revents != 0) {
      signalfd_siginfo info;
      if (::read(stops.fd(), &info, sizeof info) == sizeof info) {
        auto signo = static_cast<unsigned char>(info.ssi_signo);
        (void)::send(connection, &signo, 1, MSG_NOSIGNAL);
      }
    }
    if (fds[0].revents != 0) return ReceiveFrame(connection);
  }
}

// One request: `op` with the caller's stdio, then `body`; waits for the outcome or "cold".
Result<PoolAnswer> Ask(const std::string& socket_path, const char* op, const RunOptions& options,
                       const std::string& body) {
  PhaseTrace trace;
  PoolAnswer answer;
  ASSIGN_OR_RETURN(std::optional<UniqueFd> connection, ConnectToPoolSocket(socket_path));
  trace.Mark("pool connect");
  if (!connection) {
    answer.cold_reason = "no pool server at " + socket_path;
    return answer;
  }
  nlohmann::json request = {
      {"op", op}, {"capture", options.capture_output}, {"stdin", options.pass_stdin}};
  std::string head = request.dump();
  RETURN_IF_ERROR(SendRequest(connection->get(), {head, body},
                              {options.stdin_fd, options.stdout_fd, options.stderr_fd}));
  trace.Mark("pool request");
  auto frame = AwaitReply(connection->get());
  trace.Mark("pool answer");
  if (!frame) {
    return Error(ErrorCode::kIo, "pool server at " + socket_path +
                                     " went away during the run: " + frame.error().message());
  }
  ASSIGN_OR_RETURN(nlohmann::json reply, ParseReply(*frame));
  if (reply["kind"] == "cold") {
    answer.cold_reason = reply.value("reason", "the pool cannot run this");
    return answer;
  }
  if (reply["kind"] != "outcome") return Error(ErrorCode::kIo, "pool server: unexpected reply");
  auto outcome = ReceiveFrame(connection->get());
  if (!outcome) return Error(ErrorCode::kIo, "pool server: " + outcome.error().message());
  ASSIGN_OR_RETURN(answer.outcome, OutcomeFromWire(*outcome));
  trace.Mark("pool outcome");
  return answer;
}

}  // namespace

Result<PoolAnswer> RunInPool(const std::string& socket_path, const JailSpec& spec,
                             const RunOptions& options) {
  return Ask(socket_path, "run", options, SpecToJson(spec));
}

Result<PoolAnswer> ExecInPool(const std::string& socket_path, const ExecRequest& request) {
  nlohmann::json body = {
      {"sandbox", request.sandbox},
      {"argv", request.argv},
      {"env", request.env},
      {"workdir", request.workdir ? nlohmann::json(*request.workdir) : nlohmann::json(nullptr)},
      {"timeout", request.timeout_seconds ? nlohmann::json(*request.timeout_seconds)
                                          : nlohmann::json(nullptr)}};
  return Ask(socket_path, "exec", request.io, body.dump());
}

Status WaitForPoolReady(const std::string& socket_path) {
  ASSIGN_OR_RETURN(std::optional<UniqueFd> connection, ConnectToPoolSocket(socket_path));
  if (!connection) return Error(ErrorCode::kNotFound, "no pool server at " + socket_path);
  RETURN_IF_ERROR(SendRequest(connection->get(), {R"({"op":"wait_ready"})"}, {}));
  ASSIGN_OR_RETURN(std::string frame, ReceiveFrame(connection->get()));
  ASSIGN_OR_RETURN(nlohmann::json reply, ParseReply(frame));
  if (reply["kind"] != "ready") return Error(ErrorCode::kIo, "pool server: unexpected reply");
  return Ok();
}

}  // namespace corral::runtime
