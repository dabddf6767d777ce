#include "tools/tool_service.h"

#include <chrono>

#include "tools/host_paths.h"

namespace corral::tools {

ToolService::ToolService(std::unique_ptr<runtime::SandboxProvider> provider, ToolSettings settings,
                         std::unique_ptr<runtime::AuditLog> audit)
    : provider_(std::move(provider)), settings_(std::move(settings)), audit_(std::move(audit)) {}

Result<std::unique_ptr<ToolService>> ToolService::FromConfig(const runtime::ProviderConfig& config,
                                                             const runtime::JailSpec& jail_spec) {
  ASSIGN_OR_RETURN(auto provider, runtime::MakeProvider(config, jail_spec));
  ToolSettings settings = SettingsFrom(config);
  std::unique_ptr<runtime::AuditLog> audit;
  if (config.audit_log.enabled) {
    std::string path =
        config.audit_log.path.empty() ? config.base_dir + "/audit.jsonl" : config.audit_log.path;
    audit = std::make_unique<runtime::AuditLog>(path, config.audit_log.max_bytes,
                                                config.audit_log.keep, settings.secrets);
  }
  return std::make_unique<ToolService>(std::move(provider), std::move(settings), std::move(audit));
}

ToolOutput ToolService::Call(const std::string& user_id, const std::string& thread_id,
                             const std::string& tool, const nlohmann::json& args,
                             std::string* audit_error) {
  auto start = std::chrono::steady_clock::now();
  runtime::AuditRecord rec;
  rec.user = user_id;
  rec.thread = thread_id;
  rec.tool = tool;
  if (args.is_object()) {
    for (const auto& [k, v] : args.items()) {
      rec.args.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  for (const auto& [k, v] : settings_.env) rec.env_names.push_back(k);

  ToolOutput out;
  auto id = provider_->Acquire(thread_id, user_id);
  std::shared_ptr<runtime::Sandbox> sandbox;
  if (!id) {
    out = {"Error: " + id.error().message(), false, {}, {}};
  } else if (!(sandbox = provider_->Get(*id))) {
    out = {"Error: sandbox " + *id + " not found after acquire", false, {}, {}};
  } else {
    rec.sandbox_id = *id;
    out = RunTool(*sandbox, tool, args, settings_);
    if (std::string notice = sandbox->TakeNotice(); !notice.empty()) {
      out.text += (out.text.empty() ? "" : "\n\n") + notice;
    }
    provider_->Release(*id);
  }
  if (!out.ok) {
    // Errors come from every layer below and may name host paths: never show them.
    auto dirs = runtime::ThreadDirsFor(provider_->config().base_dir, user_id, thread_id);
    out.text = MaskHostPaths(std::move(out.text), provider_->config(), dirs ? &*dirs : nullptr);
  }
  rec.ok = out.ok;
  if (!out.ok) rec.error = out.text;
  rec.exit_code = out.exit_code;
  rec.limit = out.limit;
  rec.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (audit_) {
    Status s = audit_->Append(rec);
    if (!s && audit_error) *audit_error = s.error().message();
  }
  return out;
}

}  // namespace corral::tools
