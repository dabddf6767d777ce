// The tool layer's per-file locks (tools/file_locks.h): exclusion across processes, and
// lock files that exist only while a lock is held.
#include "tools/file_locks.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace corral::tools {
namespace {

class FileLocksTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("CORRAL_RUNTIME_DIR", runtime_.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("CORRAL_RUNTIME_DIR"); }

  size_t LockFiles() const {
    std::error_code ec;
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(runtime_.Join("tool-locks"), ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    return n;
  }

  test::TempDir runtime_;
};

TEST_F(FileLocksTest, ALockFileExistsOnlyWhileItsLockIsHeld) {
  {
    auto a = LockFile("sbx", "/mnt/user-data/a.txt");
    auto b = LockFile("sbx", "/mnt/user-data/b.txt");
    EXPECT_EQ(LockFiles(), 2u);
  }
  EXPECT_EQ(LockFiles(), 0u);
  for (int i = 0; i < 50; ++i) auto held = LockFile("sbx", "/file" + std::to_string(i));
  EXPECT_EQ(LockFiles(), 0u) << "one file left per path ever locked";
}

// Processes (each with its own in-process mutexes) increment one counter file under the
// lock: with the lock files unlinked on every release, no increment may be lost.
TEST_F(FileLocksTest, ProcessesTakeTurnsAndNoUpdateIsLost) {
  const std::string counter = runtime_.Join("counter");
  std::ofstream(counter) << 0;
  constexpr int kProcesses = 4, kRounds = 200;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int r = 0; r < kRounds; ++r) {
        auto held = LockFile("sbx", "/counter");
        int value = 0;
        std::ifstream(counter) >> value;
        std::ofstream(counter) << value + 1;
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  int value = 0;
  std::ifstream(counter) >> value;
  EXPECT_EQ(value, kProcesses * kRounds);
  EXPECT_EQ(LockFiles(), 0u);
}

}  // namespace
}  // namespace corral::tools
