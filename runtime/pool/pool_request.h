// Parsing of the frames a pool server (runtime/pool/pool_server.h) receives from a client:
// the request head, a "run" request's spec and an "exec" request's command, in the shapes
// runtime/pool/pool_protocol.h describes. Pure functions, so that they can be tested and
// fuzzed without a socket (tests/fuzz/fuzz_pool_protocol.cc). Pool server process.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// A request's first frame: {"op":..., "capture":bool, "stdin":bool, "brief":bool}.
struct PoolRequestHead {
  std::string op;  // "run", "exec", "wait_ready"; "" when absent
  bool capture = false;
  bool pass_stdin = false;
  bool brief = false;
};
Result<PoolRequestHead> ParsePoolRequestHead(const std::string& frame);

// A "run" request's spec frame: SpecToJson's form, or {"default_spec": true, "argv": [...]}
// from the front program — the spec `corral run` builds without options.
Result<JailSpec> ParseRunSpecFrame(const std::string& frame);

// An "exec" request's second frame: {"sandbox","argv","env","workdir","timeout"}. The
// result's `io` is left for the caller.
Result<ExecRequest> ParseExecFrame(const std::string& frame);

}  // namespace corral::runtime
