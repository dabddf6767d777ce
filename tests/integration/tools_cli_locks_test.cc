// str_replace from many separate `corral tool` processes at once must not lose an update:
// the per-(sandbox, path) lock has to hold across processes, not only across threads.
// Uses the local provider (no jail needed), a private base dir and runtime dir.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "base/files.h"
#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

class ToolsCliLocksTest : public LeakCheckedTest {};

TEST_F(ToolsCliLocksTest, ConcurrentStrReplaceProcessesLoseNoUpdate) {
  TempDir base;
  TempDir runtime;
  RunOptions options;
  options.env = {"CORRAL_RUNTIME_DIR=" + runtime.path()};
  const std::string file = "/mnt/user-data/workspace/f.txt";
  auto tool = [&](const std::string& name, const std::string& args) {
    return RunCorral({"tool", name, "--provider", "local", "--base-dir", base.path(), "--thread",
                      "t1", "--args", args},
                     options);
  };
  Result<RunResult> w = tool("write_file", R"({"path":")" + file + R"(","content":"END\n"})");
  ASSERT_TRUE(w && w->exit_code == 0) << (w ? w->Describe() : w.error().message());

  constexpr int kProcesses = 12;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kProcesses; ++i) {
    threads.emplace_back([&, i] {
      Result<RunResult> r =
          tool("str_replace", R"({"path":")" + file + R"(","old_str":"END","new_str":"X)" +
                                  std::to_string(i) + R"(\nEND"})");
      if (r && r->exit_code == 0 && r->out == "OK") ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kProcesses);
  Result<RunResult> read = tool("read_file", R"({"path":")" + file + R"("})");
  ASSERT_TRUE(read && read->exit_code == 0) << (read ? read->Describe() : "");
  for (int i = 0; i < kProcesses; ++i) {
    EXPECT_NE(read->out.find("X" + std::to_string(i) + "\n"), std::string::npos)
        << "update " << i << " lost:\n"
        << read->out;
  }
}

}  // namespace
}  // namespace corral::test
