#include "cli/front/fast_path.h"

#include <string_view>

namespace corral::cli::front {

namespace {

constexpr std::string_view kPoolEq = "--pool=";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::optional<FastRequest> ParseFastPath(const std::vector<std::string>& args) {
  if (args.size() < 2) return std::nullopt;
  FastRequest request;
  if (args[1] == "run") {
    request.kind = FastKind::kRun;
  } else if (args[1] == "exec") {
    request.kind = FastKind::kExec;
  } else {
    return std::nullopt;
  }
  size_t i = 2;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& arg = args[i];
    if (arg == "--pool") {
      if (++i == args.size()) return std::nullopt;
      request.pool = args[i];
    } else if (StartsWith(arg, kPoolEq)) {
      request.pool = arg.substr(kPoolEq.size());
    } else if (arg == "-i" || arg == "--stdin") {
      request.pass_stdin = true;
    } else if (request.kind == FastKind::kExec && request.sandbox.empty() && !arg.empty() &&
               arg[0] != '-') {
      request.sandbox = arg;
    } else {
      return std::nullopt;
    }
  }
  if (i == args.size()) return std::nullopt;  // no "--"
  request.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  if (request.command.empty() || request.pool.empty() || request.pool == "off") {
    return std::nullopt;
  }
  if (request.kind == FastKind::kExec && request.sandbox.empty()) return std::nullopt;
  return request;
}

std::vector<std::string> WithPoolOff(const std::vector<std::string>& args) {
  if (args.size() < 2) return args;
  std::vector<std::string> out = {args[0], args[1], "--pool", "off"};
  size_t i = 2;
  for (; i < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--pool") {
      ++i;  // and its value
      continue;
    }
    if (StartsWith(args[i], kPoolEq)) continue;
    out.push_back(args[i]);
  }
  for (; i < args.size(); ++i) out.push_back(args[i]);
  return out;
}

}  // namespace corral::cli::front
