// corral: the program users run. It serves the plainest `corral run` and `corral exec`
// (cli/front/fast_path.h) from a running pool server itself and hands every other command
// line, and every request the pool declines, to the full CLI (corral-cli, cli/main.cc).
//
// Why a separate program: a pooled run spends under 2 ms in the server, and the full CLI
// spends more than 1 ms just starting (relocating and initialising 4 MB of C++: iostreams,
// the argument parser's tables, the logger) before main. This program links only the
// pool client, so it starts about as fast as a C program does.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/front/fast_path.h"
#include "cli/front/full_cli.h"
#include "cli/outcome_report.h"
#include "runtime/pool_client.h"
#include "runtime/pool_protocol.h"

namespace {

using corral::cli::front::FastKind;
using corral::cli::front::FastRequest;

corral::Result<corral::runtime::PoolAnswer> Ask(const FastRequest& fast) {
  using namespace corral::runtime;
  std::string socket = fast.pool == "auto" ? DefaultPoolSocket() : fast.pool;
  RunOptions io;
  io.pass_stdin = fast.pass_stdin;
  if (fast.kind == FastKind::kRun) {
    JailSpec spec;  // the default spec: what `corral run` builds without options
    spec.argv = fast.command;
    return RunInPool(socket, spec, io);
  }
  ExecRequest request;
  request.sandbox = fast.sandbox;
  request.argv = fast.command;
  request.io = io;
  return ExecInPool(socket, request);
}

// SPDLOG_LEVEL=debug (or trace) makes the full CLI say why a run was not pooled; so here.
bool DebugWanted() {
  const char* level = std::getenv("SPDLOG_LEVEL");
  return level != nullptr && (std::strstr(level, "debug") || std::strstr(level, "trace"));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  std::optional<FastRequest> fast = corral::cli::front::ParseFastPath(args);
  if (!fast) return corral::cli::front::ExecFullCli(args);
  auto answer = Ask(*fast);
  if (!answer) {
    std::fprintf(stderr, "corral: %s\n", answer.error().message().c_str());
    return 125;
  }
  if (answer->outcome) {
    // The same report as the full CLI's (exec: its timeout is the sandbox's own).
    return corral::cli::ReportOutcome(*answer->outcome, corral::runtime::LimitsSpec{}, false);
  }
  // A socket the user named must answer: the full CLI says so when it does not.
  bool unanswered = answer->cold_reason.rfind("no pool server", 0) == 0;
  if (fast->pool != "auto" && unanswered) return corral::cli::front::ExecFullCli(args);
  if (DebugWanted())
    std::fprintf(stderr, "corral: debug: not pooled: %s\n", answer->cold_reason.c_str());
  return corral::cli::front::ExecFullCli(corral::cli::front::WithPoolOff(args));
}
