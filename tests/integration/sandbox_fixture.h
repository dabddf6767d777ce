// The fixture of the persistent-sandbox tests (sandbox_test.cc, sandbox_pause_test.cc):
// sandboxes made through `corral create` with the probe at /opt/p, execs through
// `corral exec`, and every sandbox a test made removed after it. Root only.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"

namespace corral::test {

class SandboxTest : public JailTest {
 protected:
  void TearDown() override {
    for (const auto& name : created_) (void)RunCorral({"rm", name});
  }

  std::string NewName() {
    static std::atomic<int> n{0};
    return "it-" + std::to_string(getpid()) + "-" + std::to_string(++n);
  }

  // corral create --name N <flags>; the probe is always mounted at /opt/p.
  std::string Create(const std::vector<std::string>& flags = {}) {
    std::string name = NewName();
    std::vector<std::string> args = {"create", "--name", name, "-v", ProbeBinary() + ":/opt/p:ro"};
    args.insert(args.end(), flags.begin(), flags.end());
    Result<RunResult> r = RunCorral(args);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    created_.push_back(name);
    return name;
  }

  Result<RunResult> Exec(const std::string& name, const std::vector<std::string>& command,
                         const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(name);
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return RunCorral(args);
  }

  // stdout of a successful `exec NAME -- bash -c SCRIPT` (`shell`: sh where bash is not
  // there, as in the VM guest).
  std::string Bash(const std::string& name, const std::string& script,
                   const std::string& shell = "bash") {
    Result<RunResult> r = Exec(name, {shell, "-c", script});
    EXPECT_TRUE(r) << r.error().message();
    if (!r) return "";
    EXPECT_EQ(r->exit_code, 0) << r->Describe();
    return r->out;
  }

  nlohmann::json Stats(const std::string& name) {
    Result<RunResult> r = RunCorral({"stats", "--json", name});
    if (!r || r->exit_code != 0) return nlohmann::json();
    return nlohmann::json::parse(r->out, nullptr, false);
  }

  std::vector<std::string> created_;
};

}  // namespace corral::test
