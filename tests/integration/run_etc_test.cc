// The jail's /etc: generated passwd/group/hosts/hostname plus a curated copy of host
// files, one read-only snapshot shared by every jail with the same content
// (runtime/run/etc_snapshot.h). Root only; leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

class EtcTest : public JailTest {
 protected:
  std::string RunIn(const std::string& hostname) {
    RunOptions options;
    options.env = {"CORRAL_RUNTIME_DIR=" + runtime_.path()};
    Result<RunResult> r = RunCorral({"run", "--hostname", hostname, "--", "sh", "-c",
                                     "cat /etc/hostname; grep -c sandbox /etc/passwd; "
                                     "touch /etc/x 2>/dev/null && echo writable || echo read-only"},
                                    options);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    return r ? r->out : "";
  }

  size_t Snapshots() const {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(runtime_.Join("etc"))) {
      if (e.path().filename().string()[0] != '.') ++n;
    }
    return n;
  }

  TempDir runtime_;
};

TEST_F(EtcTest, JailsShareOneReadOnlySnapshotPerContent) {
  EXPECT_EQ(RunIn("etc-a"), "etc-a\n1\nread-only\n");
  EXPECT_EQ(RunIn("etc-b"), "etc-b\n1\nread-only\n");
  EXPECT_EQ(Snapshots(), 2u) << "a different hostname is different content";
  EXPECT_EQ(RunIn("etc-a"), "etc-a\n1\nread-only\n");
  EXPECT_EQ(Snapshots(), 2u) << "the same content reuses its snapshot";
  for (const auto& e : std::filesystem::directory_iterator(runtime_.Join("etc"))) {
    struct stat st;
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << e.path();
    EXPECT_EQ(st.st_mode & 07777, 0755u) << e.path();
    EXPECT_FALSE(std::filesystem::exists(e.path() / "shadow")) << e.path();
  }
}

}  // namespace
}  // namespace corral::test
