// runtime/etc_snapshot: content-keyed, shared, read-only /etc snapshots.
#include "runtime/run/etc_snapshot.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "base/files.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

class EtcSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("CORRAL_RUNTIME_DIR", runtime_.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("CORRAL_RUNTIME_DIR"); }
  test::TempDir runtime_;
  test::TempDir host_;
};

TEST_F(EtcSnapshotTest, SameEntriesShareADirectoryAndAnEditMakesANewOne) {
  std::string host_file = host_.Join("services");
  std::ofstream(host_file) << "echo 7/tcp\n";
  using Kind = EtcEntry::Kind;
  std::vector<EtcEntry> entries = {{Kind::kDir, "ssl", "", ""},
                                   {Kind::kFile, "hostname", "box\n", ""},
                                   {Kind::kSymlink, "os-release", "../usr/lib/os-release", ""},
                                   {Kind::kHostFile, "services", host_file, "ino1:size11:t1"}};
  auto first = EnsureEtcSnapshot(entries);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->rfind(runtime_.Join("etc/"), 0), 0u) << *first;
  EXPECT_EQ(*ReadFile(*first + "/hostname"), "box\n");
  EXPECT_EQ(*ReadFile(*first + "/services"), "echo 7/tcp\n");
  EXPECT_EQ(std::filesystem::read_symlink(*first + "/os-release"), "../usr/lib/os-release");
  EXPECT_TRUE(std::filesystem::is_directory(*first + "/ssl"));
  struct stat st;
  ASSERT_EQ(::stat(first->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);

  auto again = EnsureEtcSnapshot(entries);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);

  // The host file changes (its fingerprint with it): a new snapshot, the old one intact.
  std::ofstream(host_file) << "echo 7/udp\n";
  entries.back().fingerprint = "ino1:size11:t2";
  auto edited = EnsureEtcSnapshot(entries);
  ASSERT_TRUE(edited);
  EXPECT_NE(*edited, *first);
  EXPECT_EQ(*ReadFile(*edited + "/services"), "echo 7/udp\n");
  EXPECT_EQ(*ReadFile(*first + "/services"), "echo 7/tcp\n");

  entries[1].data = "other\n";
  auto other = EnsureEtcSnapshot(entries);
  ASSERT_TRUE(other);
  EXPECT_NE(*other, *edited);
  // No temporary directories are left behind.
  for (const auto& e : std::filesystem::directory_iterator(runtime_.Join("etc"))) {
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }
}

}  // namespace
}  // namespace corral::runtime
