// `corral code run [jail options] [--lang python] [--sandbox NAME] [--json] (-c CODE | FILE | -)`:
// reads the snippet, then runtime/code does the rest (payload, runner, scan, result).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/jail_flags.h"
#include "cli/outcome_report.h"
#include "runtime/code/code_run.h"
#include "runtime/run/outcome_report.h"

namespace corral::cli {

namespace {

struct CodeFlags {
  JailFlags jail;
  bool json = false;
  std::string lang = "python";
  std::string sandbox;
  std::optional<std::string> inline_code;  // -c
  std::string file;                        // FILE or "-"
};

Result<std::string> ReadCode(const CodeFlags& flags) {
  if (flags.inline_code && !flags.file.empty()) {
    return Error(ErrorCode::kInvalidArgument, "code run: give -c CODE or FILE, not both");
  }
  if (flags.inline_code) return *flags.inline_code;
  if (flags.file.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "code run: no code given (-c CODE, FILE, or - for stdin)");
  }
  std::ostringstream text;
  if (flags.file == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(flags.file, std::ios::binary);
  if (!in) return Error::FromErrno(errno, flags.file);
  text << in.rdbuf();
  return text.str();
}

// Without --json: the code's output as it would have printed it, then what corral adds.
int Report(const runtime::code::CodeResult& r, const runtime::LimitsSpec& limits) {
  std::fwrite(r.outcome.stdout_stream.text.data(), 1, r.outcome.stdout_stream.text.size(), stdout);
  std::fflush(stdout);
  std::fwrite(r.outcome.stderr_stream.text.data(), 1, r.outcome.stderr_stream.text.size(), stderr);
  if (r.status == "refused") return r.exit_code;  // its stderr said why
  for (const auto& f : r.findings) {
    std::fprintf(stderr, "corral: warning: %s\n", runtime::code::FindingLine(f).c_str());
  }
  std::fputs(runtime::OutcomeReport(r.outcome, limits, /*with_reason=*/true).c_str(), stderr);
  return r.exit_code;
}

int Run(const CodeFlags& flags) {
  runtime::JailSpec spec;
  FlagNames names;
  if (!BuildSpec(flags.jail, &spec, &names)) return InvalidSpecExit(flags.json);
  auto code = ReadCode(flags);
  if (!code) return ReportRefusal(code.error(), flags.json);
  runtime::code::CodeRequest request;
  request.code = std::move(*code);
  request.lang = flags.lang;
  request.policy = spec.python;
  request.sandbox = flags.sandbox;
  if (flags.jail.timeout) request.timeout_seconds = *flags.jail.timeout;
  auto result = runtime::code::RunCode(spec, request);
  if (!result) return ReportRefusal(NameFlags(result.error(), names), flags.json);
  if (flags.json) {
    std::printf("%s\n", runtime::code::CodeResultToJson(*result).c_str());
    std::fflush(stdout);
    return result->exit_code;
  }
  return Report(*result, spec.limits);
}

}  // namespace

void AddCodeCommand(CLI::App& app, int* exit_code) {
  CLI::App* code = app.add_subcommand("code", "run model-written code in a jail (Python)");
  code->require_subcommand(1);
  CLI::App* run = code->add_subcommand(
      "run", "scan a snippet in the jail, then run it there under the python: policy");
  auto flags = std::make_shared<CodeFlags>();
  AddJailFlags(run, &flags->jail);
  run->add_flag("--json", flags->json,
                "print one JSON result: stdout, stderr, exit_code, status, limit, findings");
  run->add_option("--lang", flags->lang, "the snippet's language (python)");
  run->add_option("--sandbox", flags->sandbox,
                  "run in this persistent sandbox (corral create) instead of a fresh jail");
  run->add_option("-c", flags->inline_code, "the code, as one argument");
  run->add_option("file", flags->file, "a file with the code, or - for stdin");
  run->callback([flags, exit_code] { *exit_code = Run(*flags); });
}

}  // namespace corral::cli
