#include "runtime/code/code_result.h"

#include <nlohmann/json.hpp>
#include <string_view>

namespace corral::runtime::code {
namespace {

constexpr std::string_view kNotRunLine =
    "corral: the code was not run (change the keys named above, or set python.scan.mode: warn "
    "to run it anyway)";

constexpr std::string_view kHeaderPrefix =
    "\x1e"
    "corral-code ";

std::string StatusOf(const RunOutcome& o) {
  switch (o.status) {
    case RunStatus::kExited:
      return o.exit_code == 0 ? "ok" : "error";
    case RunStatus::kTimedOut:
      return "timeout";
    case RunStatus::kOomKilled:
      return "oom";
    case RunStatus::kSignaled:
      return "killed";
    case RunStatus::kSetupFailed:
      return "setup_failed";
  }
  return "error";
}

// The header's JSON, or discarded when the first line is not a header with our nonce.
nlohmann::json TakeHeader(std::string* stderr_text, const std::string& nonce) {
  if (stderr_text->compare(0, kHeaderPrefix.size(), kHeaderPrefix) != 0) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  const size_t end = stderr_text->find('\n');
  if (end == std::string::npos) return nlohmann::json(nlohmann::json::value_t::discarded);
  nlohmann::json header = nlohmann::json::parse(
      stderr_text->substr(kHeaderPrefix.size(), end - kHeaderPrefix.size()), nullptr, false);
  if (!header.is_object() || header.value("nonce", "") != nonce) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  stderr_text->erase(0, end + 1);
  return header;
}

Finding FindingFromJson(const nlohmann::json& j) {
  Finding f;
  if (!j.is_object()) return f;
  f.line = j.value("line", 0);
  f.col = j.value("col", 0);
  f.name = j.value("name", "");
  f.key = j.value("key", "");
  f.message = j.value("message", "");
  return f;
}

}  // namespace

CodeResult InterpretOutcome(RunOutcome outcome, const std::string& nonce,
                            const std::string& scan_mode) {
  CodeResult r;
  r.scan_mode = scan_mode;
  nlohmann::json header = TakeHeader(&outcome.stderr_stream.text, nonce);
  bool refused = false;
  if (!header.is_discarded()) {
    if (header.contains("findings") && header["findings"].is_array()) {
      for (const auto& f : header["findings"]) r.findings.push_back(FindingFromJson(f));
    }
    refused = header.value("refused", false);
    if (header.contains("scan_ms") && header["scan_ms"].is_number()) {
      r.scan_ms = header["scan_ms"].get<double>();
    }
  }
  // A refusal counts only if the jail's process ended by itself (not a limit's kill).
  if (refused && outcome.status == RunStatus::kExited) {
    r.status = "refused";
    r.exit_code = kRefusedExitCode;
    // Said in stderr too, so that every front-end that shows stderr shows why.
    for (const Finding& f : r.findings) {
      outcome.stderr_stream.text += "corral: refused: " + FindingLine(f) + "\n";
    }
    outcome.stderr_stream.text += std::string(kNotRunLine) + "\n";
  } else {
    r.status = StatusOf(outcome);
    r.exit_code = CliExitCode(outcome);
  }
  r.outcome = std::move(outcome);
  return r;
}

std::string CodeResultToJson(const CodeResult& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : r.findings) {
    findings.push_back({{"line", f.line},
                        {"col", f.col},
                        {"name", f.name},
                        {"key", f.key},
                        {"message", f.message}});
  }
  const RunOutcome& o = r.outcome;
  nlohmann::json j = {
      {"status", r.status},
      {"exit_code", r.exit_code},
      {"stdout", o.stdout_stream.text},
      {"stderr", o.stderr_stream.text},
      {"limit", o.limit ? nlohmann::json(LimitName(*o.limit)) : nlohmann::json(nullptr)},
      {"findings", std::move(findings)},
      {"scan_mode", r.scan_mode},
      {"scan_ms", r.scan_ms ? nlohmann::json(*r.scan_ms) : nlohmann::json(nullptr)},
      {"outcome", nlohmann::json::parse(OutcomeToJson(o), nullptr, false)},
  };
  if (!o.oci_runtime.empty()) j["runtime"] = o.oci_runtime;
  j["outcome"].erase("stdout");
  j["outcome"].erase("stderr");
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string FindingLine(const Finding& f) {
  return "line " + std::to_string(f.line) + ": " + f.message;
}

}  // namespace corral::runtime::code
