// What the `corral` front program (cli/front/main.cc) serves itself: `corral run` and
// `corral exec` in their plainest form, which a pool server can answer without anything
// but the command line. Everything else goes to the full CLI (corral-cli).
// Freestanding (cli/front/sys.h): views into argv, no allocation.
#pragma once

namespace corral::cli::front {

enum class FastKind { kRun, kExec };

struct FastRequest {
  FastKind kind = FastKind::kRun;
  const char* pool = "auto";       // "auto" or a socket path; never "off"
  bool pass_stdin = false;         // -i, --stdin
  const char* sandbox = nullptr;   // kExec: the positional NAME
  char* const* command = nullptr;  // the tail of argv after "--", NULL-terminated
};

// True, with *out filled, when argv (argc entries, NULL-terminated) is exactly one of
//   corral run  [--pool auto|SOCKET] [-i|--stdin] -- CMD [ARGS...]
//   corral exec [--pool auto|SOCKET] [-i|--stdin] NAME -- CMD [ARGS...]
// (options in any order, `--pool=V` accepted); false for anything else (other options,
// --pool off, no command), which the full CLI parses and reports.
bool ParseFastPath(int argc, char* const* argv, FastRequest* out);

// argv with every --pool option before the "--" replaced by one `--pool off` after the
// subcommand: the full CLI's command line after the pool server declined the request.
// `out` holds argc + 3 pointers; the result is NULL-terminated.
void WithPoolOff(int argc, char* const* argv, char** out);

}  // namespace corral::cli::front
