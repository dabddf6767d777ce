// What the `corral` front program (cli/front/main.cc) serves itself: `corral run` and
// `corral exec` in their plainest form, which a pool server can answer without anything
// but the command line. Everything else goes to the full CLI (corral-cli).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace corral::cli::front {

enum class FastKind { kRun, kExec };

struct FastRequest {
  FastKind kind = FastKind::kRun;
  std::string pool = "auto";  // "auto" or a socket path; never "off"
  bool pass_stdin = false;    // -i, --stdin
  std::string sandbox;        // kExec: the positional NAME
  std::vector<std::string> command;
};

// The request when argv is exactly one of
//   corral run  [--pool auto|SOCKET] [-i|--stdin] -- CMD [ARGS...]
//   corral exec [--pool auto|SOCKET] [-i|--stdin] NAME -- CMD [ARGS...]
// (options in any order, `--pool=V` accepted); nullopt for anything else (other options,
// --pool off, no command), which the full CLI parses and reports.
std::optional<FastRequest> ParseFastPath(const std::vector<std::string>& args);

// `args` with every --pool option before the "--" replaced by one `--pool off` after the
// subcommand: the full CLI's command line after the pool server declined the request.
std::vector<std::string> WithPoolOff(const std::vector<std::string>& args);

}  // namespace corral::cli::front
