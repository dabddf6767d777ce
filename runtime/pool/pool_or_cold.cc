#include "runtime/pool/pool_or_cold.h"

#include <spdlog/spdlog.h>

#include <functional>

#include "runtime/pool/pool_client.h"
#include "runtime/pool/pool_protocol.h"

namespace corral::runtime {

namespace {

// `answer` from the server at `pool` (auto|SOCKET): the outcome, or nullopt to go cold.
Result<std::optional<RunOutcome>> Pooled(
    const std::string& pool, const std::function<Result<PoolAnswer>(const std::string&)>& ask) {
  bool named = pool != "auto";
  ASSIGN_OR_RETURN(PoolAnswer answer, ask(named ? pool : DefaultPoolSocket()));
  if (answer.outcome) return std::move(answer.outcome);
  if (named && answer.cold_reason.rfind("no pool server", 0) == 0) {
    return Error(ErrorCode::kNotFound, "--pool: " + answer.cold_reason);
  }
  spdlog::debug("not pooled: {}", answer.cold_reason);
  return std::optional<RunOutcome>();
}

}  // namespace

Result<RunOutcome> RunPooledOrCold(const std::string& pool, const JailSpec& spec,
                                   const RunOptions& options) {
  // A terminal is opened by the command itself, which a prepared jail is past: cold. A
  // network policy is part of the spec the pool matches (JailPool::Unfit): a pool serves
  // an allow-list run only if its jails have that very policy (and their own proxies).
  if (pool != "off" && !options.tty) {
    ASSIGN_OR_RETURN(auto outcome, Pooled(pool, [&](const std::string& socket) {
                       return RunInPool(socket, spec, options);
                     }));
    if (outcome) return std::move(*outcome);
  }
  return RunJail(spec, options);
}

Result<RunOutcome> ExecPooledOrDirect(const std::string& pool, const ExecRequest& request) {
  if (pool != "off" && !request.io.tty) {
    ASSIGN_OR_RETURN(auto outcome, Pooled(pool, [&](const std::string& socket) {
                       return ExecInPool(socket, request);
                     }));
    if (outcome) return std::move(*outcome);
  }
  return ExecInSandbox(request);
}

}  // namespace corral::runtime
