// The fixture of the agent-tool tests over the jail provider: real persistent sandboxes,
// each test's thread data in a temp dir, every sandbox removed by provider Shutdown().
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"
#include "tools/tool_service.h"

namespace corral::test {

class ToolsJailTest : public JailTest {
 protected:
  void SetUp() override {
    SetUpWith([](runtime::ProviderConfig&) {});
  }
  // SetUp with `edit` applied to the provider config first.
  template <typename Edit>
  void SetUpWith(Edit edit) {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    config_.use = runtime::ProviderKind::kJail;
    config_.base_dir = dir_.Join("base");
    config_.audit_log.path = dir_.Join("audit.jsonl");
    config_.environment = {{"SKILL_TOKEN", "sk-very-secret-value-123"}};
    ASSERT_TRUE(dir_.MakeDirs("skills/public", 0755));
    ASSERT_TRUE(dir_.WriteFile("skills/public/SKILL.md", "# skill\n", 0644));
    config_.skills_path = dir_.Join("skills");
    edit(config_);
    runtime::JailSpec spec;
    spec.limits.timeout_seconds = 30;
    auto s = tools::ToolService::FromConfig(config_, spec);
    ASSERT_TRUE(s) << s.error().message();
    service_ = std::move(*s);
  }
  void TearDown() override {
    if (service_) service_->provider().Shutdown();
  }

  tools::ToolOutput Call(const std::string& tool, const nlohmann::json& args,
                         const std::string& thread = "t1", const std::string& user = "alice") {
    return service_->Call(user, thread, tool, args);
  }
  std::string Bash(const std::string& cmd, const std::string& thread = "t1",
                   const std::string& user = "alice") {
    return Call("bash", {{"command", cmd}}, thread, user).text;
  }

  TempDir dir_;
  runtime::ProviderConfig config_;
  std::unique_ptr<tools::ToolService> service_;
};

}  // namespace corral::test
