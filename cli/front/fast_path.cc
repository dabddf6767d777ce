#include "cli/front/fast_path.h"

#include "cli/front/sys.h"

namespace corral::cli::front {

namespace {

using corral::front::sys::StartsWith;
using corral::front::sys::StrEq;

constexpr char kPoolEq[] = "--pool=";
constexpr int kPoolEqLen = sizeof kPoolEq - 1;

}  // namespace

bool ParseFastPath(int argc, char* const* argv, FastRequest* out) {
  if (argc < 2) return false;
  FastRequest request;
  if (StrEq(argv[1], "run")) {
    request.kind = FastKind::kRun;
  } else if (StrEq(argv[1], "exec")) {
    request.kind = FastKind::kExec;
  } else {
    return false;
  }
  int i = 2;
  for (; i < argc && !StrEq(argv[i], "--"); ++i) {
    const char* arg = argv[i];
    if (StrEq(arg, "--pool")) {
      if (++i == argc) return false;
      request.pool = argv[i];
    } else if (StartsWith(arg, kPoolEq)) {
      request.pool = arg + kPoolEqLen;
    } else if (StrEq(arg, "-i") || StrEq(arg, "--stdin")) {
      request.pass_stdin = true;
    } else if (request.kind == FastKind::kExec && request.sandbox == nullptr && arg[0] != '\0' &&
               arg[0] != '-') {
      request.sandbox = arg;
    } else {
      return false;
    }
  }
  if (i == argc) return false;  // no "--"
  request.command = argv + i + 1;
  if (i + 1 == argc || request.pool[0] == '\0' || StrEq(request.pool, "off")) return false;
  if (request.kind == FastKind::kExec && request.sandbox == nullptr) return false;
  *out = request;
  return true;
}

void WithPoolOff(int argc, char* const* argv, char** out) {
  static char pool_flag[] = "--pool";
  static char off[] = "off";
  int n = 0;
  if (argc < 2) {
    for (; n < argc; ++n) out[n] = argv[n];
    out[n] = nullptr;
    return;
  }
  out[n++] = argv[0];
  out[n++] = argv[1];
  out[n++] = pool_flag;
  out[n++] = off;
  int i = 2;
  for (; i < argc && !StrEq(argv[i], "--"); ++i) {
    if (StrEq(argv[i], "--pool")) {
      ++i;  // and its value
      continue;
    }
    if (StartsWith(argv[i], kPoolEq)) continue;
    out[n++] = argv[i];
  }
  for (; i < argc; ++i) out[n++] = argv[i];
  out[n] = nullptr;
}

}  // namespace corral::cli::front
