// What Docker users expect of mounts and the working directory, black-box through
// `corral run`: a missing -w directory is created where the sandbox user may write and
// refused clearly elsewhere; a mount point inside a read-only system tree is refused up
// front with the reason, or used when it exists; /var/tmp and /run exist; a read-write
// mount the sandbox user cannot write to is warned about with the host command that fixes
// it; a -w outside every mount gets a tmpfs of its own. Root only; leak-checked.
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

TEST_F(MountsTest, AWorkdirOutsideEveryMountGetsATmpfsOfItsOwn) {
  // docker run -w /work: made in the container's writable layer. The jail's root is
  // read-only, so /work is a tmpfs of its own, the sandbox user's.
  RunResult r = Run({"-w", "/work/app"}, "pwd; stat -c %u .; touch f && echo wrote");
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "/work/app\n1000\nwrote\n");
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

TEST_F(MountsTest, AnUnwritableReadWriteMountIsWarnedAboutWithTheHostFixThatWorks) {
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);  // root-owned, like /srv/x
  RunResult r = Run({"-v", dir_.path() + ":/work:rw"}, "touch /work/x 2>/dev/null || echo denied");
  EXPECT_EQ(r.out, "denied\n") << r.Describe();
  EXPECT_NE(r.err.find("cannot write there"), std::string::npos) << r.Describe();
  // The failure's hint points at the mount, not at Landlock (turning it off would not help).
  RunResult json = Run({"--json", "-v", dir_.path() + ":/work:rw"}, "touch /work/x");
  EXPECT_NE(json.out.find("On the host: chown -R "), std::string::npos) << json.Describe();
  EXPECT_EQ(json.out.find("--landlock off"), std::string::npos) << json.Describe();
  EXPECT_NE(json.out.find("not writable by the sandbox user"), std::string::npos)
      << json.Describe();

  // The warning names the host's ids (under the reserved identity the jail's uid 1000 is
  // another uid on the host), and its command, run as given, makes the mount writable.
  const std::string marker = "On the host: ";
  size_t at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.Describe();
  at += marker.size();
  const std::string fix = r.err.substr(at, r.err.find("  (or", at) - at);
  EXPECT_EQ(fix.rfind("chown -R ", 0), 0u) << fix;
  auto ran = RunProgram("/bin/sh", {"-c", fix});
  ASSERT_TRUE(ran && ran->exit_code == 0) << fix;
  RunResult ok = Run({"-v", dir_.path() + ":/work:rw"}, "touch /work/x && echo wrote");
  EXPECT_EQ(ok.out, "wrote\n") << ok.Describe();
  EXPECT_EQ(ok.err.find("cannot write there"), std::string::npos) << ok.Describe();
  struct stat st;
  ASSERT_EQ(::stat(dir_.Join("x").c_str(), &st), 0);
  const std::string owner = std::to_string(st.st_uid) + ":";
  EXPECT_NE(fix.find("chown -R " + owner), std::string::npos)
      << "the warning named the uid the sandbox writes as: " << fix << " vs " << st.st_uid;
}

}  // namespace
}  // namespace corral::test
