// Whole-file writes replace the content under its name in one step
// (tools/providers/file_replace.h): readers never see a mix, a failed write keeps the old
// content, and symlinks, hard links and permission bits mean what they meant before.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "base/files.h"
#include "tests/support/temp_dir.h"
#include "tools/providers/file_access.h"

namespace corral {
namespace {

class FileReplaceTest : public ::testing::Test {
 protected:
  runtime::FileView View() const { return {dir_.path(), false, std::nullopt, std::nullopt}; }
  std::string Read(const std::string& rel) const {
    auto r = ReadFile(dir_.Join(rel));
    return r ? *r : "<" + r.error().message() + ">";
  }
  // Names in the directory that are leftovers of a write.
  int Partials() const {
    int n = 0;
    DIR* d = ::opendir(dir_.path().c_str());
    while (struct dirent* e = ::readdir(d)) {
      n += std::string(e->d_name).find(".corral-partial-") != std::string::npos;
    }
    ::closedir(d);
    return n;
  }
  test::TempDir dir_;
};

TEST_F(FileReplaceTest, ReplacesContentAndKeepsPermissionBits) {
  ASSERT_TRUE(dir_.WriteFile("run.sh", "#!/bin/sh\necho old\n", 0750));
  ASSERT_TRUE(runtime::WriteBytes(View(), "run.sh", "#!/bin/sh\necho new\n", false));
  EXPECT_EQ(Read("run.sh"), "#!/bin/sh\necho new\n");
  struct stat st {};
  ASSERT_EQ(::stat(dir_.Join("run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_TRUE(runtime::WriteBytes(View(), "sub/new.txt", "fresh", false));
  EXPECT_EQ(Read("sub/new.txt"), "fresh");
  ASSERT_TRUE(runtime::WriteBytes(View(), "run.sh", " appended", true));
  EXPECT_EQ(Read("run.sh"), "#!/bin/sh\necho new\n appended");
  EXPECT_EQ(Partials(), 0);
}

TEST_F(FileReplaceTest, SymlinksAndHardLinksStillShareTheContent) {
  ASSERT_TRUE(dir_.WriteFile("target.txt", "old"));
  ASSERT_EQ(::symlink("target.txt", dir_.Join("link.txt").c_str()), 0);
  ASSERT_EQ(::link(dir_.Join("target.txt").c_str(), dir_.Join("hard.txt").c_str()), 0);
  ASSERT_TRUE(runtime::WriteBytes(View(), "link.txt", "through the link", false));
  struct stat st {};
  ASSERT_EQ(::lstat(dir_.Join("link.txt").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink was replaced by a file";
  EXPECT_EQ(Read("target.txt"), "through the link");
  EXPECT_EQ(Read("hard.txt"), "through the link");
  ASSERT_TRUE(runtime::WriteBytes(View(), "hard.txt", "through the hard link", false));
  EXPECT_EQ(Read("target.txt"), "through the hard link");
  EXPECT_EQ(Partials(), 0);
}

// The write fails part-way (here RLIMIT_FSIZE; a full disk is the same): the old content
// stays whole under the name and nothing is left beside it. Written in place, the file
// would already have been truncated.
TEST_F(FileReplaceTest, AFailedWriteKeepsTheOldContent) {
  ASSERT_TRUE(dir_.WriteFile("data.txt", "old content\n"));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {
      4096, 4096
    };
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto written = runtime::WriteBytes(View(), "data.txt", std::string(65536, 'x'), false);
    ::_exit(written ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a write past RLIMIT_FSIZE succeeded";
  EXPECT_EQ(Read("data.txt"), "old content\n");
  EXPECT_EQ(Partials(), 0);
}

TEST_F(FileReplaceTest, AReaderNeverSeesAMixOfOldAndNew) {
  const std::string a(1 << 20, 'a'), b(1 << 20, 'b');
  ASSERT_TRUE(dir_.WriteFile("big.txt", a));
  std::atomic<bool> done{false};
  std::atomic<int> torn{0}, reads{0};
  std::thread reader([&] {
    while (!done) {
      auto got = ReadFile(dir_.Join("big.txt"));
      if (!got) continue;
      ++reads;
      if (*got != a && *got != b) ++torn;
    }
  });
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(runtime::WriteBytes(View(), "big.txt", i % 2 ? a : b, false));
  }
  done = true;
  reader.join();
  EXPECT_EQ(torn.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(Partials(), 0);
}

// base/files.h WriteFileWhole, corral's own records (snapshot records, intents, budgets):
// the file is made or replaced whole, with the mode asked for, and no temp file is left.
TEST(WriteFileWholeTest, MakesOrReplacesTheFileWholeAndLeavesNoTempFile) {
  test::TempDir dir;
  const std::string path = dir.Join("record.json");
  ASSERT_TRUE(WriteFileWhole(path, "one\n"));
  ASSERT_TRUE(WriteFileWhole(path, "two, longer\n"));
  EXPECT_EQ(ReadFile(path).value(), "two, longer\n");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_NE(::stat((path + ".tmp").c_str(), &st), 0);
  Status missing = WriteFileWhole(dir.Join("no/such/dir/f"), "x");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("no/such/dir/f.tmp"), std::string::npos);
}

}  // namespace
}  // namespace corral
