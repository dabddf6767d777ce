// ToolService: one agent tool call end to end — acquire the thread's sandbox from the
// provider, run the tool, write the audit line, release — for the CLI (`corral tool`) and
// later the HTTP daemon. Thread-safe (the provider and the audit log are).
#pragma once

#include <memory>
#include <string>

#include "tools/audit_log.h"
#include "tools/providers/provider_factory.h"
#include "tools/tools.h"

namespace corral::tools {

class ToolService {
 public:
  // `audit` may be null (no audit log).
  ToolService(std::unique_ptr<runtime::SandboxProvider> provider, ToolSettings settings,
              std::unique_ptr<runtime::AuditLog> audit);

  // Builds provider, settings and audit log from the config (audit_log.path defaults to
  // {base_dir}/audit.jsonl).
  static Result<std::unique_ptr<ToolService>> FromConfig(const runtime::ProviderConfig& config,
                                                         const runtime::JailSpec& jail_spec);

  // Errors acquiring the sandbox become "Error: ..." texts, like DeerFlow's
  // ensure_sandbox_initialized failures. An audit log that cannot be written is reported on
  // *audit_error (if given) and does not change the tool's result.
  ToolOutput Call(const std::string& user_id, const std::string& thread_id, const std::string& tool,
                  const nlohmann::json& args, std::string* audit_error = nullptr);

  runtime::SandboxProvider& provider() { return *provider_; }
  const ToolSettings& settings() const { return settings_; }

 private:
  std::unique_ptr<runtime::SandboxProvider> provider_;
  ToolSettings settings_;
  std::unique_ptr<runtime::AuditLog> audit_;
};

}  // namespace corral::tools
