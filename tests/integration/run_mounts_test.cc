// What Docker users expect of mounts and the working directory, black-box through
// `corral run`: a missing -w directory is created where the sandbox user may write and
// refused clearly elsewhere; a mount point inside a read-only system tree is refused up
// front with the reason, or used when it exists; /var/tmp and /run exist; a read-write
// mount the sandbox user cannot write to is warned about. Root only; leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

class MountsTest : public JailTest {
 protected:
  RunResult Run(const std::vector<std::string>& flags, const std::string& script) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "bash", "-c", script});
    auto r = RunCorral(args);
    EXPECT_TRUE(r) << r.error().message();
    return r ? *r : RunResult{};
  }
  TempDir dir_;
};

TEST_F(MountsTest, MissingWorkdirIsCreatedWhereTheSandboxUserMayWrite) {
  RunResult r = Run({"-w", "/tmp/a/b"}, "pwd; stat -c %u .");
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "/tmp/a/b\n1000\n");
}

TEST_F(MountsTest, MissingWorkdirInAReadOnlyTreeIsRefusedClearly) {
  RunResult r = Run({"-w", "/usr/no/such/dir"}, "pwd");
  EXPECT_EQ(r.exit_code, 125) << r.Describe();
  EXPECT_NE(r.err.find("chdir /usr/no/such/dir"), std::string::npos) << r.Describe();
  EXPECT_NE(r.err.find("cannot create it: EROFS"), std::string::npos) << r.Describe();
}

TEST_F(MountsTest, MountPointInsideAReadOnlySystemTreeIsRefusedUpFront) {
  for (const char* target : {"/usr/local/corral-test-mnt", "/etc/corral-test-mnt"}) {
    RunResult r = Run({"-v", dir_.path() + ":" + target + ":ro"}, "true");
    EXPECT_EQ(r.exit_code, 125) << r.Describe();
    EXPECT_NE(r.err.find(std::string(target) + ": cannot be a mount point"), std::string::npos)
        << r.Describe();
    EXPECT_NE(r.err.find("read-only in the jail"), std::string::npos) << r.Describe();
    EXPECT_EQ(r.err.find("Read-only file system"), std::string::npos)
        << "failed late, inside the jail: " << r.Describe();
  }
}

TEST_F(MountsTest, ExistingMountPointInsideAReadOnlyTreeWorks) {
  ASSERT_TRUE(dir_.WriteFile("marker", "here\n", 0644));
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);  // the sandbox user may read it
  RunResult r = Run({"-v", dir_.path() + ":/usr/local:ro"}, "cat /usr/local/marker");
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "here\n");
}

TEST_F(MountsTest, VarTmpAndRunExist) {
  RunResult r = Run({},
                    "test -d /var/tmp && test -w /var/tmp && test -k /var/tmp && "
                    "test -d /run && echo ok");
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "ok\n");
}

TEST_F(MountsTest, ReadWriteMountTheSandboxUserCannotWriteIsWarnedAbout) {
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);  // root-owned, like /srv/x
  RunResult r = Run({"-v", dir_.path() + ":/work:rw"}, "touch /work/x 2>/dev/null || echo denied");
  EXPECT_EQ(r.out, "denied\n") << r.Describe();
  EXPECT_NE(r.err.find("the sandbox user (uid 1000) cannot write there"), std::string::npos)
      << r.Describe();
  EXPECT_NE(r.err.find("--user"), std::string::npos) << r.Describe();
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  RunResult ok = Run({"-v", dir_.path() + ":/work:rw"}, "touch /work/x && echo wrote");
  EXPECT_EQ(ok.out, "wrote\n") << ok.Describe();
  EXPECT_EQ(ok.err.find("cannot write there"), std::string::npos) << ok.Describe();
}

}  // namespace
}  // namespace corral::test
